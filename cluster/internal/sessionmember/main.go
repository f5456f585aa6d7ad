// Command sessionmember is one cluster member hosting real Session grains
// on a shared MySQL/MariaDB journal, for the cluster package's
// multi-process tests (built without -race: protoactor's cluster races
// under it). Its scripted provider answers every turn with
// "pid=<pid> users=<user messages seen>" (after 1.5 s when the last user
// message starts with "slow") and logs "turn-start <unix ns>" on stderr, so a test can tell which process
// ran a turn and that it saw the whole history. Control API on -ctl:
//
//	GET /members                                this member's view of the topology
//	GET /create?id=ID&loc=DIR                    Create through the cluster
//	GET /prompt?id=ID&msg=MID&text=T&timeout=MS  Prompt (queued, resume), WaitIdle, last answer
//	GET /wait?id=ID&timeout=MS                   WaitIdle, last answer
//
// It prints "READY <actor address> <ctl address>" once it has joined.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/managed"
)

func main() {
	health := flag.Int("health", 0, "automanaged health port")
	members := flag.String("members", "", "comma-separated health host:port of every member")
	journal := flag.String("journal", "", "mysql:// URL of the shared journal")
	data := flag.String("data", "", "this member's data directory")
	refresh := flag.Duration("refresh", 500*time.Millisecond, "automanaged poll interval")
	flag.Parse()
	if err := run(*health, strings.Split(*members, ","), *journal, *data, *refresh); err != nil {
		fmt.Fprintln(os.Stderr, "sessionmember:", err)
		os.Exit(1)
	}
}

// slowTurn is how long a turn whose last user message starts with "slow"
// waits before its first part: time for a test to kill its host mid-turn.
const slowTurn = 1500 * time.Millisecond

var model = messages.ModelRef{Provider: "scripted", ID: "cluster-test"}

func run(health int, members []string, journalURL, data string, refresh time.Duration) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	j, err := persistence.OpenURL(ctx, "", journalURL, false, persistence.Config{})
	if err != nil {
		return err
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	out, err := managed.New(managed.Config{Dir: filepath.Join(data, "tool-output")})
	if err != nil {
		return err
	}
	locs, err := supervisor.New(system, supervisor.Config{Logger: log, Children: []supervisor.ChildSpec{
		supervisor.ContextRegistryChild(contextsources.RegistryConfig{}, nil),
		{Name: actors.ToolRegistryName, Props: func(dir string) *actor.Props {
			p, err := toolactors.Props(toolactors.Config{Dir: dir, Output: out, Logger: log})
			if err != nil {
				panic(err)
			}
			return p
		}},
	}})
	if err != nil {
		return err
	}
	prov, err := scripted.New(scripted.Config{Func: func(_ context.Context, req *provider.Request, _ int) (scripted.Turn, error) {
		users, last := 0, ""
		for _, m := range req.Messages {
			if m.Role == provider.RoleUser {
				users++
				last = m.Text
			}
		}
		// The test reads this line to time a resumed turn after a kill.
		fmt.Fprintf(os.Stderr, "turn-start %d users=%d last=%q\n", time.Now().UnixNano(), users, last)
		turn := scripted.Turn{Text: fmt.Sprintf("pid=%d users=%d", os.Getpid(), users)}
		if strings.HasPrefix(last, "slow") {
			turn.FirstDelay = scripted.Duration(slowTurn)
		}
		return turn, nil
	}})
	if err != nil {
		return err
	}
	sessions, err := actors.NewSessions(system, actors.Config{
		Journal: j, Locations: locs, DefaultModel: model, Logger: log,
		Providers: func(messages.ModelRef) (provider.Provider, error) { return prov, nil },
	})
	if err != nil {
		return err
	}
	reg := cluster.SessionRegistry()
	grain, err := cluster.SessionGrain(cluster.SessionGrainConfig{Sessions: sessions, Registry: reg, Logger: log})
	if err != nil {
		return err
	}
	m, err := cluster.Start(system, cluster.Config{
		Name: "sessiontest", AutoManagePort: health, Members: members, RefreshTTL: refresh,
		Kinds: []cluster.Kind{grain}, Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(m.Members())
	})
	mux.HandleFunc("GET /create", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := m.Request(r.Context(), q.Get("id"), cluster.SessionKind, &actors.Create{Location: q.Get("loc")}, cluster.CallOptions{Timeout: 2 * time.Minute}) // a backstop
		answer(w, res, err)
	})
	mux.HandleFunc("GET /prompt", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ms, _ := strconv.Atoi(q.Get("timeout"))
		opt := cluster.CallOptions{Timeout: time.Duration(ms) * time.Millisecond}
		p := &actors.Prompt{MessageID: q.Get("msg"), Prompt: messages.Prompt{Text: q.Get("text")}, Delivery: messages.Queue, Resume: true}
		if _, err := m.Request(r.Context(), q.Get("id"), cluster.SessionKind, p, opt); err != nil {
			answer(w, nil, err)
			return
		}
		res, err := m.Request(r.Context(), q.Get("id"), cluster.SessionKind, &actors.WaitIdle{}, opt)
		if err != nil {
			answer(w, nil, err)
			return
		}
		out := res.(*actors.Outcome)
		last, err := lastAssistantText(r.Context(), j, q.Get("id"))
		answer(w, turnResult{Outcome: *out, Answer: last}, err)
	})
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ms, _ := strconv.Atoi(q.Get("timeout"))
		res, err := m.Request(r.Context(), q.Get("id"), cluster.SessionKind, &actors.WaitIdle{}, cluster.CallOptions{Timeout: time.Duration(ms) * time.Millisecond})
		if err != nil {
			answer(w, nil, err)
			return
		}
		last, err := lastAssistantText(r.Context(), j, q.Get("id"))
		answer(w, turnResult{Outcome: *res.(*actors.Outcome), Answer: last}, err)
	})
	fmt.Printf("READY %s %s\n", m.Address(), ln.Addr())
	return http.Serve(ln, mux)
}

// turnResult is what /prompt returns: how the drain ended and the last
// assistant text, read from the shared journal.
type turnResult struct {
	Outcome actors.Outcome
	Answer  string
}

func lastAssistantText(ctx context.Context, j *persistence.Journal, id string) (string, error) {
	hist, err := j.ModelHistory(ctx, id)
	if err != nil {
		return "", err
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role != messages.RoleAssistant {
			continue
		}
		var b strings.Builder
		for _, p := range hist[i].Parts {
			b.WriteString(p.Text)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("session %s: no assistant message", id)
}

func answer(w http.ResponseWriter, res any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	_ = json.NewEncoder(w).Encode(res)
}
