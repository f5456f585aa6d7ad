package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionrt/sessionrt/toolactors/patch"
	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// ApplyPatch applies a `*** Begin Patch` patch: add, update and delete, in order. Every
// hunk is parsed, every target resolved inside the Location, one edit batch approved
// and every target preflighted before the first write. Moves are refused.
type ApplyPatch struct{ def definitionOnce }

// ApplyPatchInput is apply_patch's input.
type ApplyPatchInput struct {
	Patch string `json:"patch"`
}

// Applied is one committed operation.
type Applied struct {
	Op   patch.Kind `json:"op"`
	Path string     `json:"path"`
}

// ApplyPatchOutput is apply_patch's structured value.
type ApplyPatchOutput struct {
	Applied []Applied `json:"applied"`
}

// ErrPartial is wrapped by PartialError.
var ErrPartial = errors.New("patch partially applied")

// PartialError reports a commit-time failure: Applied were written, Failed was not, and
// NotApplied were never attempted. There is no rollback.
type PartialError struct {
	Applied    []Applied
	Failed     Applied
	Err        error
	NotApplied []Applied
}

func (e *PartialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patch partially applied: %s %s failed: %v.", e.Failed.Op, e.Failed.Path, e.Err)
	b.WriteString(" Applied before the failure (kept):")
	if len(e.Applied) == 0 {
		b.WriteString(" none")
	}
	for _, a := range e.Applied {
		fmt.Fprintf(&b, " %s %s;", a.Op, a.Path)
	}
	b.WriteString(" Not applied:")
	if len(e.NotApplied) == 0 {
		b.WriteString(" none")
	}
	for _, a := range e.NotApplied {
		fmt.Fprintf(&b, " %s %s;", a.Op, a.Path)
	}
	return b.String()
}

func (e *PartialError) Unwrap() []error { return []error{ErrPartial, e.Err} }

// Definition implements Tool. It is built once: its schema and JSON are immutable.
func (a *ApplyPatch) Definition() Definition { return a.def.get(a.define) }

func (a *ApplyPatch) define() Definition {
	return Definition{
		Name: "apply_patch",
		Description: "Edit files with a patch: '*** Begin Patch', then '*** Add File: <path>' (lines prefixed '+'), " +
			"'*** Update File: <path>' (hunks starting '@@ <anchor>', lines ' ' context, '-' removed, '+' added), " +
			"'*** Delete File: <path>', then '*** End Patch'. Paths are relative to the project directory. " +
			"Moves are not supported. Nothing is written unless every hunk parses and matches.",
		Action: "edit",
		Input: schema.Object([]string{"patch"}, map[string]*schema.Schema{
			"patch": schema.String("The full patch text"),
		}),
	}
}

type planned struct {
	op      patch.Op
	target  string
	shown   string
	content string // Add and Update: the new content
	mode    os.FileMode
}

// Run implements Tool.
func (a *ApplyPatch) Run(ctx context.Context, call Call) (Result, error) {
	var in ApplyPatchInput
	if err := decode(call.Input, &in); err != nil {
		return Result{}, err
	}
	ops, err := patch.Parse(in.Patch)
	if err != nil {
		return Result{}, err
	}
	// Refuse moves and resolve every target before anything else.
	plan := make([]planned, 0, len(ops))
	seen := map[string]int{}
	for _, op := range ops {
		if op.MoveTo != "" {
			return Result{}, fmt.Errorf("apply_patch: patch line %d: moving %s to %s is not supported; nothing was applied", op.Line, op.Path, op.MoveTo)
		}
		target, err := Resolve(call.Dir, op.Path)
		if err != nil {
			return Result{}, fmt.Errorf("apply_patch: patch line %d: %w; nothing was applied", op.Line, err)
		}
		if prev, dup := seen[target]; dup {
			return Result{}, fmt.Errorf("apply_patch: patch line %d: %s is already changed at line %d; nothing was applied", op.Line, op.Path, prev)
		}
		seen[target] = op.Line
		plan = append(plan, planned{op: op, target: target, shown: Rel(call.Dir, target)})
	}
	resources := make([]string, len(plan))
	for i, p := range plan {
		resources[i] = p.target
	}
	if err := call.Authorize(ctx, "edit", resources, nil, fmt.Sprintf("Apply patch to %d file(s)", len(plan))); err != nil {
		return Result{}, err
	}
	// Preflight every target against the disk, computing updated content.
	for i := range plan {
		if err := preflight(&plan[i]); err != nil {
			return Result{}, fmt.Errorf("apply_patch: patch line %d: %w; nothing was applied", plan[i].op.Line, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	// Commit in order; no rollback.
	var out ApplyPatchOutput
	for i, p := range plan {
		if err := commit(p); err != nil {
			pe := &PartialError{Applied: out.Applied, Failed: Applied{p.op.Kind, p.shown}, Err: err}
			for _, rest := range plan[i+1:] {
				pe.NotApplied = append(pe.NotApplied, Applied{rest.op.Kind, rest.shown})
			}
			return Result{}, pe
		}
		out.Applied = append(out.Applied, Applied{p.op.Kind, p.shown})
	}
	var b strings.Builder
	b.WriteString("Applied patch:\n")
	letter := map[patch.Kind]string{patch.Add: "A", patch.Update: "M", patch.Delete: "D"}
	for _, x := range out.Applied {
		fmt.Fprintf(&b, "%s %s\n", letter[x.Op], x.Path)
	}
	return Result{Title: fmt.Sprintf("%d file(s) changed", len(out.Applied)), Text: b.String(), Structured: out}, nil
}

func preflight(p *planned) error {
	info, err := os.Lstat(p.target)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", p.shown, err)
	}
	switch p.op.Kind {
	case patch.Add:
		if exists {
			return fmt.Errorf("add %s: the file already exists (use Update File)", p.shown)
		}
		p.content = strings.Join(p.op.Lines, "\n") + "\n"
		p.mode = 0o644
	case patch.Update, patch.Delete:
		if !exists {
			return fmt.Errorf("%s %s: no such file", p.op.Kind, p.shown)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s %s: not a regular file", p.op.Kind, p.shown)
		}
		p.mode = info.Mode().Perm()
		if p.op.Kind == patch.Update {
			old, err := os.ReadFile(p.target)
			if err != nil {
				return fmt.Errorf("update %s: %w", p.shown, err)
			}
			if p.content, err = patch.Apply(string(old), p.op.Chunks); err != nil {
				return fmt.Errorf("update %s: %w", p.shown, err)
			}
		}
	}
	return nil
}

func commit(p planned) error {
	switch p.op.Kind {
	case patch.Delete:
		return os.Remove(p.target)
	case patch.Add:
		if err := os.MkdirAll(filepath.Dir(p.target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p.target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, p.mode)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(p.content); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	default:
		// Write a sibling and rename so a crash never leaves half a file.
		tmp := p.target + ".sessionrt-patch.tmp"
		if err := os.WriteFile(tmp, []byte(p.content), p.mode); err != nil {
			_ = os.Remove(tmp)
			return err
		}
		if err := os.Rename(tmp, p.target); err != nil {
			_ = os.Remove(tmp)
			return err
		}
		return nil
	}
}
