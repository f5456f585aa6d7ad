// Command sessionrt is a durable runtime for AI-agent sessions: see README.md.
package main

import (
	"os"

	"github.com/sessionrt/sessionrt/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
