package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/sessionrt/sessionrt/config"
)

// ConfigCmd groups the commands on OpenCode-compatible configuration files.
type ConfigCmd struct {
	Show ConfigShowCmd `cmd:"" help:"Print a Location's merged configuration, each value with the file (and line) it came from."`
}

func (c *ConfigCmd) Help() string {
	return `sessionrt reads OpenCode's configuration files (opencode.json or opencode.jsonc), later ones
overriding earlier ones, objects merged key by key:

  1. $XDG_CONFIG_HOME/opencode/ or ~/.config/opencode/ (config.json, opencode.json, opencode.jsonc)
  2. walking from the project root (the nearest folder with .git) down to the Location:
     opencode.json[c], then .opencode/opencode.json[c] (OPENCODE_DISABLE_PROJECT_CONFIG=1 skips this)
  3. the file named by OPENCODE_CONFIG
  4. serve --config FILE

{env:VAR} and {file:path} are replaced before parsing. A running server reads them again
at each turn boundary of a session when they changed.`
}

// ConfigShowCmd prints the merged configuration of a Location.
type ConfigShowCmd struct {
	Dir    string `help:"The Location (default: the working directory)." type:"path"`
	Config string `name:"config" help:"One more file, read last (as serve --config)." type:"path"`
	JSON   bool   `help:"Print plain merged JSON without sources."`
}

func (c *ConfigShowCmd) Run(g *Globals) error {
	dir := c.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd
	}
	if c.Config != "" {
		if _, err := os.Stat(c.Config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
	}
	cfg, err := config.NewLoader(config.Options{File: c.Config}).Load(dir)
	if err != nil {
		return err
	}
	if c.JSON {
		_, err := fmt.Fprintf(g.out(), "%s\n", cfg.Tree.JSON())
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Location %s (project root %s)\n", cfg.Dir, cfg.Root)
	if len(cfg.Files) == 0 {
		b.WriteString("// no configuration file found: OpenCode's defaults apply\n")
	}
	for i, f := range cfg.Files {
		fmt.Fprintf(&b, "// %d. %s\n", i+1, f)
	}
	b.WriteString(config.Render(cfg.Tree))
	_, err = fmt.Fprint(g.out(), b.String())
	return err
}
