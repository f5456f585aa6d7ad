// Command enginecount reads `go test -json` output of boltsql's
// TestEngineSuite (go-mysql-server's enginetest on the memory engine and on
// boltsql) and prints, per entry point, the tests each engine passes, and
// how many of the tests the memory engine passes each boltsql side passes.
//
//	go test -tags enginetest -run TestEngineSuite -json ./persistence/boltsql/ | go run ./persistence/boltsql/internal/enginecount [-list boltsql]
//
// -list SIDE also prints the tests the memory engine passes and SIDE does not.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type event struct {
	Action string
	Test   string
	Output string
}

const prefix = "TestEngineSuite/"

var panicLine = regexp.MustCompile(`ENGINETEST-PANICS (\d+)`)

func main() {
	list := flag.String("list", "", "print the tests the memory engine passes and this side does not")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *list); err != nil {
		fmt.Fprintln(os.Stderr, "enginecount:", err)
		os.Exit(1)
	}
}

// key is one test of one side: the entry point and the test's path below
// the side, which is the same on every side.
type key struct{ entry, rest string }

func run(in io.Reader, out io.Writer, list string) error {
	status := map[string]map[key]string{} // side -> test -> pass|fail|skip
	names := map[string]bool{}
	panics := map[string]map[string]int{} // side -> entry -> panics
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || !strings.HasPrefix(ev.Test, prefix) {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(ev.Test, prefix), "/", 3)
		if len(parts) < 2 {
			continue
		}
		entry, side := parts[0], parts[1]
		rest := ""
		if len(parts) == 3 {
			rest = parts[2]
		}
		names[ev.Test] = true
		if m := panicLine.FindStringSubmatch(ev.Output); m != nil {
			n, _ := strconv.Atoi(m[1])
			if panics[side] == nil {
				panics[side] = map[string]int{}
			}
			panics[side][entry] += n
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			if status[side] == nil {
				status[side] = map[key]string{}
			}
			status[side][key{entry, rest}] = ev.Action
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Leaves only: a parent passes or fails with its children.
	isParent := map[string]bool{}
	for n := range names {
		for i := len(n) - 1; i > 0; i-- {
			if n[i] == '/' {
				isParent[n[:i]] = true
			}
		}
	}
	sides := []string{"memory", "boltsql", "boltsql-fast"}
	type counts struct{ pass, fail, skip int }
	per := map[string]map[string]*counts{} // entry -> side -> counts
	entries := map[string]bool{}
	for side, m := range status {
		for k, st := range m {
			full := prefix + k.entry + "/" + side
			if k.rest != "" {
				full += "/" + k.rest
			}
			if isParent[full] {
				continue
			}
			entries[k.entry] = true
			if per[k.entry] == nil {
				per[k.entry] = map[string]*counts{}
			}
			c := per[k.entry][side]
			if c == nil {
				c = &counts{}
				per[k.entry][side] = c
			}
			switch st {
			case "pass":
				c.pass++
			case "fail":
				c.fail++
			default:
				c.skip++
			}
		}
	}
	var order []string
	for e := range entries {
		order = append(order, e)
	}
	sort.Strings(order)
	fmt.Fprintf(out, "%-45s %18s %26s %26s\n", "entry point", "memory pass/fail", "boltsql pass/fail (of mem)", "fast pass/fail (of mem)")
	tot := map[string]*counts{}
	for _, side := range sides {
		tot[side] = &counts{}
	}
	ofMem := map[string]int{}
	memPass := 0
	for _, e := range order {
		fmt.Fprintf(out, "%-45s", e)
		for _, side := range sides {
			c := per[e][side]
			if c == nil {
				c = &counts{}
			}
			if tot[side] == nil {
				tot[side] = &counts{}
			}
			tot[side].pass += c.pass
			tot[side].fail += c.fail
			tot[side].skip += c.skip
			if side == "memory" {
				fmt.Fprintf(out, " %8d/%-9d", c.pass, c.fail)
				continue
			}
			both := 0
			for k, st := range status["memory"] {
				if k.entry == e && st == "pass" && status[side][k] == "pass" && !isParent[prefix+k.entry+"/memory/"+k.rest] && k.rest != "" {
					both++
				}
			}
			ofMem[side] += both
			p := ""
			if n := panics[side][e]; n > 0 {
				p = fmt.Sprintf(" P%d", n)
			}
			fmt.Fprintf(out, " %6d/%-5d (%5d)%s", c.pass, c.fail, both, p)
		}
		fmt.Fprintln(out)
	}
	for k, st := range status["memory"] {
		if st == "pass" && k.rest != "" && !isParent[prefix+k.entry+"/memory/"+k.rest] {
			memPass++
		}
	}
	fmt.Fprintf(out, "\ntotal leaves: memory %d pass %d fail %d skip", tot["memory"].pass, tot["memory"].fail, tot["memory"].skip)
	for _, side := range sides[1:] {
		if tot[side].pass+tot[side].fail+tot[side].skip == 0 {
			continue
		}
		pct := 0.0
		if memPass > 0 {
			pct = 100 * float64(ofMem[side]) / float64(memPass)
		}
		np := 0
		for _, n := range panics[side] {
			np += n
		}
		fmt.Fprintf(out, "\n%s: %d pass %d fail %d skip; passes %d of the %d the memory engine passes (%.1f%%); %d panics recovered",
			side, tot[side].pass, tot[side].fail, tot[side].skip, ofMem[side], memPass, pct, np)
	}
	fmt.Fprintln(out)
	if list != "" {
		var missing []string
		for k, st := range status["memory"] {
			if st == "pass" && k.rest != "" && !isParent[prefix+k.entry+"/memory/"+k.rest] && status[list][k] != "pass" {
				missing = append(missing, fmt.Sprintf("%s/%s: %s", k.entry, k.rest, orNone(status[list][k])))
			}
		}
		sort.Strings(missing)
		fmt.Fprintf(out, "\nmemory passes, %s does not (%d):\n%s\n", list, len(missing), strings.Join(missing, "\n"))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "not run"
	}
	return s
}
