// Command chaosmember is one member of the cluster acceptance test: the
// chaos suite's member process (chaos.Member) on a shared MariaDB journal,
// built without -race (protoactor's cluster races under it). Its only
// argument is the chaos.MemberConfig as JSON.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessionrt/sessionrt/chaos"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chaosmember '<chaos.MemberConfig JSON>'")
		os.Exit(2)
	}
	var cfg chaos.MemberConfig
	if err := json.Unmarshal([]byte(os.Args[1]), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember: config:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := chaos.Member(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		os.Exit(1)
	}
}
