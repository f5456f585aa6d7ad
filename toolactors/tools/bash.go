package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/toolactors/proc"
	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// Bash runs a shell command in the Location. It is not a sandbox: the command has the
// server user's authority. See package proc for the process-group guarantees.
type Bash struct {
	cfg Config
	def definitionOnce
}

// BashInput is bash's input.
type BashInput struct {
	Command     string `json:"command"`
	Timeout     int    `json:"timeout,omitempty"` // milliseconds
	Workdir     string `json:"workdir,omitempty"`
	Description string `json:"description,omitempty"`
}

// BashOutput is bash's structured value.
type BashOutput struct {
	ExitCode  int    `json:"exitCode"`
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	Dropped   int64  `json:"droppedBytes,omitempty"`
	Workdir   string `json:"workdir"`
	TimeoutMS int64  `json:"timeoutMs"`
	// Warnings are advisory: absolute paths outside the Location found in the command's
	// arguments. They are not a sandbox boundary and request no permission.
	Warnings []string `json:"warnings,omitempty"`
}

// Definition implements Tool. It is built once: its schema and JSON are immutable.
func (b *Bash) Definition() Definition { return b.def.get(b.define) }

func (b *Bash) define() Definition {
	return Definition{
		Name: "bash",
		Description: fmt.Sprintf("Run a shell command (%s -c) in the project directory, stdin closed. "+
			"stdout and stderr are returned together with the exit code. Default timeout %d ms, max %d ms; "+
			"on timeout the whole process group is killed. Background jobs are killed when the command ends.",
			b.cfg.Shell, b.cfg.BashDefaultTimeout.Milliseconds(), b.cfg.BashMaxTimeout.Milliseconds()),
		Action: "bash",
		Input: schema.Object([]string{"command"}, map[string]*schema.Schema{
			"command":     schema.String("The command to run"),
			"timeout":     schema.Integer("Timeout in milliseconds", 1, float64(b.cfg.BashMaxTimeout.Milliseconds())),
			"workdir":     schema.String("Working directory relative to the project directory (default: the project directory)"),
			"description": schema.String("What the command does, in 5-10 words"),
		}),
	}
}

// Run implements Tool.
func (b *Bash) Run(ctx context.Context, call Call) (Result, error) {
	var in BashInput
	if err := decode(call.Input, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return Result{}, fmt.Errorf("bash: field \"command\" is empty")
	}
	dir := call.Dir
	if in.Workdir != "" {
		if filepath.IsAbs(in.Workdir) {
			real, err := filepath.EvalSymlinks(in.Workdir)
			if err != nil {
				return Result{}, fmt.Errorf("bash: workdir %q: %w", in.Workdir, err)
			}
			if !within(call.Dir, real) {
				// Outside the Location: an enforced external_directory authority check.
				if err := call.Authorize(ctx, "external_directory", []string{real}, []string{real + "/*"}, "Run in "+real); err != nil {
					return Result{}, err
				}
			}
			dir = real
		} else {
			real, err := Resolve(call.Dir, in.Workdir)
			if err != nil {
				return Result{}, err
			}
			dir = real
		}
	}
	title := in.Description
	if title == "" {
		title = in.Command
	}
	if err := call.Authorize(ctx, "bash", []string{in.Command}, []string{alwaysPattern(in.Command)}, "Run: "+in.Command); err != nil {
		return Result{}, err
	}
	timeout := b.cfg.BashDefaultTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Millisecond, b.cfg.BashMaxTimeout)
	}
	out, err := proc.Run(ctx, proc.Spec{
		Command: in.Command, Dir: dir, Shell: b.cfg.Shell, Timeout: timeout,
		KillGrace: b.cfg.BashKillGrace, OutputCap: b.cfg.BashOutputCap,
		Started: func(pid int) {
			if b.cfg.OnBashStart != nil {
				b.cfg.OnBashStart(call.CallID, pid)
			}
		},
	})
	if err != nil {
		return Result{}, fmt.Errorf("bash: %w", err)
	}
	if out.Cancelled {
		return Result{}, ctx.Err()
	}
	var text strings.Builder
	text.WriteString(out.Output)
	if out.Output != "" && !strings.HasSuffix(out.Output, "\n") {
		text.WriteByte('\n')
	}
	switch {
	case out.TimedOut:
		fmt.Fprintf(&text, "<bash_metadata>command timed out after %d ms; its process group was killed</bash_metadata>\n", timeout.Milliseconds())
	case out.Signal != "":
		fmt.Fprintf(&text, "<bash_metadata>killed by signal %s</bash_metadata>\n", out.Signal)
	default:
		fmt.Fprintf(&text, "<bash_metadata>exit code %d</bash_metadata>\n", out.ExitCode)
	}
	return Result{
		Title:   title,
		Text:    text.String(),
		Dropped: out.Dropped,
		Structured: BashOutput{
			ExitCode: out.ExitCode, Signal: out.Signal, TimedOut: out.TimedOut, Dropped: out.Dropped,
			Workdir: dir, TimeoutMS: timeout.Milliseconds(),
			Warnings: externalPathWarnings(in.Command, call.Dir, call.ManagedDir),
		},
	}, nil
}

// alwaysPattern is what an "always" reply approves: the command's first word and
// anything after it ("git *").
func alwaysPattern(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return cmd
	}
	return f[0] + " *"
}

// externalPathWarnings is the best-effort scan of absolute arguments: each absolute
// path outside the Location (and outside the managed output directory) gives one
// advisory warning. The program word and /dev paths are skipped.
func externalPathWarnings(cmd, dir, managedDir string) []string {
	var out []string
	seen := map[string]bool{}
	for i, f := range strings.Fields(cmd) {
		f = strings.Trim(f, `"';|&<>()`)
		if eq := strings.IndexByte(f, '='); eq >= 0 && strings.HasPrefix(f[eq+1:], "/") {
			f = f[eq+1:] // --flag=/path
		}
		if i == 0 || !strings.HasPrefix(f, "/") || strings.HasPrefix(f, "/dev/") || seen[f] {
			continue
		}
		p := filepath.Clean(f)
		if within(dir, p) || (managedDir != "" && within(filepath.Clean(managedDir), p)) {
			continue
		}
		seen[f] = true
		out = append(out, fmt.Sprintf("the command names %s, outside the project directory (advisory only: bash is not sandboxed)", p))
	}
	return out
}
