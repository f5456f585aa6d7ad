// Command chaosmember is one member process of the multi-process cluster
// tests and the chaos member-kill runs (clustertest.Member) on a shared
// MariaDB journal, built without -race (protoactor's cluster races under
// it; clustertest.BuildMember). Its only argument is the
// clustertest.MemberConfig as JSON.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chaosmember '<clustertest.MemberConfig JSON>'")
		os.Exit(2)
	}
	var cfg clustertest.MemberConfig
	if err := json.Unmarshal([]byte(os.Args[1]), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember: config:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := clustertest.Member(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		os.Exit(1)
	}
}
