// Command echomember is one cluster member hosting the echo grain, for the
// cluster package's multi-process tests (built without -race: protoactor's
// cluster races under it). It serves a small control API on -ctl:
//
//	GET /call?id=ID&timeout=MS   request the echo grain ID through this member
//	GET /members                 this member's view of the topology
//	GET /where?id=ID             the member disthash places ID on
//	GET /bench?id=ID&n=N         N sequential requests to ID, mean latency
//
// and prints "READY <actor address> <ctl address>" on stdout once it has
// joined. With -client N it joins as a client instead, prints the topology
// and where -where would be placed, and exits.
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
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/cluster"
	"github.com/sessionrt/sessionrt/cluster/internal/echograin"
)

func main() {
	health := flag.Int("health", 0, "automanaged health port")
	members := flag.String("members", "", "comma-separated health host:port of every member")
	ctl := flag.String("ctl", "127.0.0.1:0", "control HTTP address")
	refresh := flag.Duration("refresh", 500*time.Millisecond, "automanaged poll interval")
	client := flag.Int("client", 0, "join as a client, wait for this many members, print the topology and -where as JSON, exit")
	where := flag.String("where", "", "with -client: the echo identity to place")
	flag.Parse()
	if *client > 0 {
		if err := runClient(strings.Split(*members, ","), *refresh, *client, *where); err != nil {
			fmt.Fprintln(os.Stderr, "echomember:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*health, strings.Split(*members, ","), *ctl, *refresh); err != nil {
		fmt.Fprintln(os.Stderr, "echomember:", err)
		os.Exit(1)
	}
}

// Topology is what -client prints.
type Topology struct {
	Members []cluster.MemberInfo
	Where   string
}

func runClient(members []string, refresh time.Duration, n int, where string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	m, err := cluster.Start(system, cluster.Config{Name: "echotest", Members: members, RefreshTTL: refresh, Registry: echograin.Registry(), Logger: log})
	if err != nil {
		return err
	}
	// A backstop: a client joining a loaded machine's cluster is slow.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ms, err := m.WaitMembers(ctx, n)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(Topology{Members: ms, Where: m.Where(where, echograin.KindName)})
}

func run(health int, members []string, ctl string, refresh time.Duration) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	m, err := cluster.Start(system, cluster.Config{
		Name: "echotest", AutoManagePort: health, Members: members, RefreshTTL: refresh,
		Kinds: []cluster.Kind{echograin.Kind()}, Registry: echograin.Registry(), Logger: log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ctl)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /call", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("timeout"))
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
		defer cancel()
		res, err := m.Request(ctx, r.URL.Query().Get("id"), echograin.KindName, &echograin.Ping{}, cluster.CallOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(res)
	})
	mux.HandleFunc("GET /bench", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		start := time.Now()
		for i := range n {
			if _, err := m.Request(r.Context(), r.URL.Query().Get("id"), echograin.KindName, &echograin.Ping{Seq: i}, cluster.CallOptions{}); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
		}
		_, _ = fmt.Fprintf(w, "%d requests, %v each\n", n, time.Since(start)/time.Duration(max(n, 1)))
	})
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(m.Members())
	})
	mux.HandleFunc("GET /where", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, m.Where(r.URL.Query().Get("id"), echograin.KindName))
	})
	fmt.Printf("READY %s %s\n", m.Address(), ln.Addr())
	return http.Serve(ln, mux)
}
