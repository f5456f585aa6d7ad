package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// fixture is a temp HOME and a temp git project with a Location below its root.
type fixture struct {
	home, root, loc string
	env             map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{home: filepath.Join(base, "home"), root: filepath.Join(base, "proj")}
	f.loc = filepath.Join(f.root, "sub")
	for _, d := range []string{f.home, filepath.Join(f.root, ".git"), f.loc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.env = map[string]string{"HOME": f.home}
	return f
}

func (f *fixture) write(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (f *fixture) loader(file string) *Loader {
	return NewLoader(Options{Getenv: func(k string) string { return f.env[k] }, File: file})
}

func (f *fixture) global() string { return filepath.Join(f.home, ".config", "opencode") }

func TestLoadMergesEverySourceInOrder(t *testing.T) {
	f := newFixture(t)
	g := f.write(t, filepath.Join(f.global(), "opencode.json"), `{
		"model": "anthropic/claude-sonnet-4-5",
		"permission": {"bash": {"*": "ask"}},
		"username": "global"
	}`)
	rootFile := f.write(t, filepath.Join(f.root, "opencode.jsonc"), `{
		// the project's own
		"permission": {"bash": {"git status*": "allow",}, "edit": "ask"},
		"username": "root",
	}`)
	dotFile := f.write(t, filepath.Join(f.loc, ".opencode", "opencode.json"), `{"default_agent": "plan"}`)
	envFile := f.write(t, filepath.Join(f.home, "env.json"), `{"username": "env"}`)
	flagFile := f.write(t, filepath.Join(f.home, "flag.jsonc"), `{"small_model": "openai/gpt-4o-mini"}`)
	f.env[EnvConfig] = envFile

	cfg, err := f.loader(flagFile).Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{g, rootFile, dotFile, envFile, flagFile}
	if strings.Join(cfg.Files, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files read:\n%s\nwant:\n%s", strings.Join(cfg.Files, "\n"), strings.Join(want, "\n"))
	}
	if cfg.Root != f.root {
		t.Fatalf("root %s, want %s", cfg.Root, f.root)
	}
	if cfg.Info.Model != "anthropic/claude-sonnet-4-5" || cfg.Info.DefaultAgent != "plan" || cfg.Info.SmallModel != "openai/gpt-4o-mini" {
		t.Fatalf("info %+v", cfg.Info)
	}
	// Objects merge deeply, in the order written: the global "*" first.
	got := Rules(cfg.Info.Permission, f.home)
	wantRules := []permission.Rule{{Action: "bash", Resource: "*", Effect: "ask"}, {Action: "bash", Resource: "git status*", Effect: "allow"}, {Action: "edit", Resource: "*", Effect: "ask"}}
	if len(got) != len(wantRules) {
		t.Fatalf("rules %v, want %v", got, wantRules)
	}
	for i := range got {
		if got[i] != wantRules[i] {
			t.Fatalf("rules %v, want %v", got, wantRules)
		}
	}
	// Each value knows its file: the later file's value wins.
	if u := cfg.Tree.Get("username"); u.Str != "env" || u.Pos.File != envFile {
		t.Fatalf("username %+v", u)
	}
	if p := cfg.Tree.At("permission", "bash", "*"); p.Pos.File != g || p.Pos.Line != 3 {
		t.Fatalf("bash * from %+v, want %s line 3", p.Pos, g)
	}
	shown := Render(cfg.Tree)
	if !strings.Contains(shown, `"git status*": "allow" // `+rootFile+":3:") || !strings.Contains(shown, `"username": "env", // `+envFile) {
		t.Fatalf("config show:\n%s", shown)
	}
}

func TestProjectDiscoveryCanBeTurnedOff(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(f.root, "opencode.json"), `{"username": "project"}`)
	f.write(t, filepath.Join(f.global(), "opencode.jsonc"), `{"username": "global"}`)
	f.env[EnvDisableProject] = "1"
	cfg, err := f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Tree.Get("username"); u.Str != "global" {
		t.Fatalf("username %q with project discovery off", u.Str)
	}
}

func TestWalkStopsAtTheProjectRoot(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(filepath.Dir(f.root), "opencode.json"), `{"username": "outside"}`)
	cfg, err := f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Files) != 0 {
		t.Fatalf("read %v above the project root", cfg.Files)
	}
}

func TestMalformedFileNamesFileLineAndColumn(t *testing.T) {
	f := newFixture(t)
	bad := f.write(t, filepath.Join(f.loc, "opencode.jsonc"), "{\n  // fine so far\n  \"model\": \"a/b\",\n  \"agent\": {\"x\": }\n}\n")
	l := f.loader("")
	_, err := l.Load(f.loc)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != bad || fe.Line != 4 || fe.Col != 18 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v (%+v), want %s:4:18", err, fe, bad)
	}
	if !strings.HasPrefix(err.Error(), bad+":4:18: ") {
		t.Fatalf("message %q", err)
	}
	// Another Location is not concerned.
	other := t.TempDir()
	if _, err := l.Load(other); err != nil {
		t.Fatalf("other Location: %v", err)
	}
}

func TestWrongValuesNameTheirPosition(t *testing.T) {
	cases := []struct{ text, want string }{
		{"{\n\"agent\": {\"plan\": {\"steps\": \"many\"}}}", ":2:29: agent.plan.steps: string given, want a number"},
		{"{\"permission\": {\"bash\": {\"*\": \"sometimes\"}}}", `:1:31: permission effect "sometimes"`},
		{"{\"model\": \"gpt-4\"}", `:1:11: model "gpt-4": want provider/model`},
		{"{\"agent\": {\"a\": {\"mode\": \"boss\"}}}", `:1:26: agent mode "boss"`},
		{"[1]", ":1:1: the configuration must be a JSON object"},
		{"{\"command\": {\"c\": {\"agent\": \"plan\"}}}", `:1:19: command "c" has no template`},
	}
	for _, c := range cases {
		f := newFixture(t)
		p := f.write(t, filepath.Join(f.loc, "opencode.json"), c.text)
		_, err := f.loader("").Load(f.loc)
		if err == nil || !strings.HasPrefix(err.Error(), p+c.want) {
			t.Errorf("%s: error %v, want prefix %s%s", c.text, err, p, c.want)
		}
	}
}

func TestSubstitutions(t *testing.T) {
	f := newFixture(t)
	f.env["MY_MODEL"] = "openai/gpt-4.1"
	f.write(t, filepath.Join(f.root, "prompts", "review.md"), "  Review \"carefully\".\nLine two.\n")
	f.write(t, filepath.Join(f.root, "opencode.jsonc"), `{
		"model": "{env:MY_MODEL}",
		"username": "{env:UNSET_VAR}x",
		// "prompt": "{file:missing.md}" stays a comment
		"agent": {"review": {"prompt": "{file:./prompts/review.md}"}}
	}`)
	l := f.loader("")
	cfg, err := l.Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Info.Model != "openai/gpt-4.1" || cfg.Tree.Get("username").Str != "x" {
		t.Fatalf("env substitution: %+v", cfg.Info)
	}
	if p := cfg.Info.Agent["review"].Prompt; p != "Review \"carefully\".\nLine two." {
		t.Fatalf("file substitution %q", p)
	}
	// A changed referenced file is a changed configuration.
	f.write(t, filepath.Join(f.root, "prompts", "review.md"), "Now shorter and longer than before.")
	cfg2, err := l.Load(f.loc)
	if err != nil || cfg2.Info.Agent["review"].Prompt != "Now shorter and longer than before." {
		t.Fatalf("after edit: %v %+v", err, cfg2)
	}
	bad := f.write(t, filepath.Join(f.loc, "opencode.json"), "{\n  \"agent\": {\"x\": {\"prompt\": \"{file:nope.md}\"}}\n}")
	_, err = l.Load(f.loc)
	if err == nil || !strings.HasPrefix(err.Error(), bad+":2:30: bad file reference {file:nope.md}: ") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestLoaderReadsAgainOnlyAfterAChange(t *testing.T) {
	f := newFixture(t)
	p := f.write(t, filepath.Join(f.root, "opencode.json"), `{"username": "a"}`)
	l := f.loader("")
	c1, err := l.Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := l.Load(f.loc)
	if c1 != c2 {
		t.Fatal("unchanged files read again")
	}
	f.write(t, p, `{"username": "bb"}`)
	c3, _ := l.Load(f.loc)
	if c3 == c1 || c3.Tree.Get("username").Str != "bb" {
		t.Fatalf("edit not seen: %+v", c3.Tree.Get("username"))
	}
	// A new file nearer the Location is a change too.
	f.write(t, filepath.Join(f.loc, ".opencode", "opencode.jsonc"), `{"username": "near"}`)
	c4, _ := l.Load(f.loc)
	if c4.Tree.Get("username").Str != "near" {
		t.Fatalf("new file not seen: %+v", c4.Tree.Get("username"))
	}
	// A file fixed after an error is read again.
	f.write(t, p, `{"username": `)
	if _, err := l.Load(f.loc); err == nil {
		t.Fatal("malformed file accepted")
	}
	f.write(t, p, `{"username": "fixed"}`)
	if c, err := l.Load(f.loc); err != nil || c.Info.Model != "" {
		t.Fatalf("fixed file: %v", err)
	}
	_ = time.Second
}

func TestAgentsAsOpenCodeShipsThem(t *testing.T) {
	f := newFixture(t)
	cfg, err := f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	managed := filepath.Join(f.home, "tool-output")
	ags, err := cfg.Agents(AgentEnv{Home: f.home, External: []string{managed}})
	if err != nil {
		t.Fatal(err)
	}
	if ags.Default != "build" || strings.Join(ags.Names(), ",") != "build,plan" {
		t.Fatalf("agents %v default %s", ags.Names(), ags.Default)
	}
	build, _ := ags.Get("build")
	plan, _ := ags.Get("plan")
	eval := func(a Agent, action, res string) permission.Effect {
		return permission.Evaluate(a.Rules, action, res).Effect
	}
	checks := []struct {
		a           Agent
		action, res string
		want        permission.Effect
	}{
		{build, "edit", "src/main.go", permission.Allow},
		{build, "bash", "rm -rf /", permission.Allow},
		{build, "read", "/p/.env", permission.Ask},
		{build, "read", "/p/.env.example", permission.Allow},
		{build, "external_directory", "/elsewhere", permission.Ask},
		{build, "external_directory", managed + "/tool_1", permission.Allow},
		{build, "question", "*", permission.Allow},
		{plan, "edit", "src/main.go", permission.Deny},
		{plan, "edit", ".opencode/plans/p.md", permission.Allow},
		{plan, "bash", "ls", permission.Ask},
		{plan, "read", "main.go", permission.Allow},
	}
	for _, c := range checks {
		if got := eval(c.a, c.action, c.res); got != c.want {
			t.Errorf("%s: %s %s = %s, want %s", c.a.Name, c.action, c.res, got, c.want)
		}
	}
	if permission.Hidden(plan.Rules, "edit") {
		t.Error("edit hidden from plan, which may still write its plan notes")
	}
}

func TestConfiguredAgentsAndPermissions(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(f.root, "opencode.json"), `{
		"default_agent": "review",
		"tools": {"bash": false},
		"permission": {"edit": "ask", "external_directory": "allow"},
		"agent": {
			"review": {"description": "Reviews", "mode": "primary", "model": "openai/gpt-4.1", "variant": "high",
				"prompt": "You review.", "temperature": 0.2, "top_p": 0.9, "steps": 3,
				"tools": {"bash": true}, "permission": {"bash": {"*": "ask", "git *": "allow"}},
				"reasoningEffort": "high", "options": {"store": false}},
			"plan": {"permission": {"edit": "allow"}},
			"helper": {"mode": "subagent"},
			"gone": {"disable": true},
			"build": {"disable": true}
		}
	}`)
	cfg, err := f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	ags, err := cfg.Agents(AgentEnv{Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	if ags.Default != "review" || strings.Join(ags.Names(), ",") != "review,helper,plan" {
		t.Fatalf("agents %v default %q", ags.Names(), ags.Default)
	}
	r, _ := ags.Get("review")
	if r.Model != "openai/gpt-4.1" || r.Variant != "high" || r.Prompt != "You review." || *r.Temperature != 0.2 || *r.TopP != 0.9 ||
		r.Steps != 3 || r.Mode != ModePrimary || r.Native || string(r.Options["reasoningEffort"]) != `"high"` || string(r.Options["store"]) != "false" {
		t.Fatalf("review %+v", r)
	}
	ev := func(a Agent, action, res string) permission.Effect {
		return permission.Evaluate(a.Rules, action, res).Effect
	}
	if ev(r, "bash", "git status") != permission.Allow || ev(r, "bash", "make") != permission.Ask || ev(r, "edit", "x") != permission.Ask ||
		ev(r, "external_directory", "/x") != permission.Allow {
		t.Fatalf("review rules %v", r.Rules)
	}
	p, _ := ags.Get("plan")
	if ev(p, "edit", "x") != permission.Allow || !permission.Hidden(p.Rules, "bash") {
		t.Fatalf("plan with config: edit %s, bash hidden %v", ev(p, "edit", "x"), permission.Hidden(p.Rules, "bash"))
	}
	h, _ := ags.Get("helper")
	if h.Mode != ModeSubagent || !permission.Hidden(h.Rules, "bash") {
		t.Fatalf("helper %+v", h)
	}

	// A default agent that is not one is an error at default_agent's value.
	p2 := f.write(t, filepath.Join(f.loc, "opencode.json"), `{"default_agent": "helper"}`)
	cfg, err = f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Agents(AgentEnv{}); err == nil || !strings.HasPrefix(err.Error(), p2+`:1:19: default agent "helper" is a subagent`) {
		t.Fatalf("subagent as default: %v", err)
	}
}

// OpenCode's internal agents (title, summary, compaction) are configured
// to change its own small requests (the title agent's model names
// sessions): configuring one lists it hidden and native, never as an agent
// a client selects. Before, "title" became a visible agent of mode all.
func TestConfiguredInternalAgentIsHidden(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(f.root, "opencode.json"), `{"agent": {"title": {"model": "openai/gpt-4o-mini"}, "compaction": {"disable": true}}}`)
	cfg, err := f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	ags, err := cfg.Agents(AgentEnv{Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := ags.Get("title")
	if !ok || !ti.Hidden || !ti.Native || ti.Model != "openai/gpt-4o-mini" || strings.Join(ags.Names(), ",") != "build,plan" {
		t.Fatalf("title agent %+v (found %v), selectable %v", ti, ok, ags.Names())
	}
	if _, ok := ags.Get("compaction"); ok {
		t.Fatal("a disabled internal agent is listed")
	}
}

func TestCommandsFromConfigAndFiles(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(f.root, "opencode.json"), `{"command": {
		"test": {"template": "Run the tests in $1 with $ARGUMENTS", "description": "tests", "agent": "plan"},
		"over": {"template": "from json"}
	}}`)
	md := f.write(t, filepath.Join(f.root, ".opencode", "command", "git", "commit.md"), "---\ndescription: Commit\nmodel: openai/gpt-4.1\nsubtask: true\n---\nCommit $1 then $2\n")
	f.write(t, filepath.Join(f.root, ".opencode", "commands", "over.md"), "from the file\n")
	f.write(t, filepath.Join(f.global(), "command", "hello.md"), "Say hello")
	l := f.loader("")
	cfg, err := l.Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Commands["git/commit"]
	if c.Description != "Commit" || c.Model != "openai/gpt-4.1" || !c.Subtask || c.Template != "Commit $1 then $2" || c.Source != md {
		t.Fatalf("git/commit %+v", c)
	}
	if cfg.Commands["over"].Template != "from the file" || cfg.Commands["hello"].Template != "Say hello" || cfg.Commands["test"].Agent != "plan" {
		t.Fatalf("commands %+v", cfg.Commands)
	}
	expand := []struct{ cmd, args, want string }{
		{"test", "pkg/a -race -v", "Run the tests in pkg/a -race -v with pkg/a -race -v"}, // the highest placeholder takes the rest
		{"git/commit", `all "the rest of it" here`, "Commit all then the rest of it here"},
		{"git/commit", "", "Commit  then"},
		{"hello", "and goodbye", "Say hello\n\nand goodbye"},
	}
	for _, e := range expand {
		if got := cfg.Commands[e.cmd].Expand(e.args); got != e.want {
			t.Errorf("%s %q = %q, want %q", e.cmd, e.args, got, e.want)
		}
	}
	// A new command file is seen at the next load.
	f.write(t, filepath.Join(f.loc, ".opencode", "command", "late.md"), "late")
	cfg, _ = l.Load(f.loc)
	if cfg.Commands["late"].Template != "late" {
		t.Fatalf("new command file not seen: %+v", cfg.Commands)
	}
}

func TestSkillsAreDiscoveredAsOpenCodeDoes(t *testing.T) {
	f := newFixture(t)
	skill := func(path, name, desc, body string) string {
		return f.write(t, path, "---\nname: "+name+"\ndescription: >\n  "+desc+"\n  continued\n---\n"+body+"\n")
	}
	skill(filepath.Join(f.home, ".claude", "skills", "a", "SKILL.md"), "alpha", "global claude", "A1")
	skill(filepath.Join(f.home, ".agents", "skills", "deep", "x", "SKILL.md"), "deep", "global agents", "D")
	skill(filepath.Join(f.root, ".claude", "skills", "a", "SKILL.md"), "alpha", "project claude", "A2")
	near := skill(filepath.Join(f.loc, ".opencode", "skill", "b", "SKILL.md"), "beta", "opencode folder", "B body")
	skill(filepath.Join(f.global(), "skills", "g", "SKILL.md"), "gamma", "global config", "G")
	skill(filepath.Join(f.root, "extra", "e", "SKILL.md"), "extra", "from skills.paths", "E")
	f.write(t, filepath.Join(f.loc, ".opencode", "skill", "noname", "SKILL.md"), "---\ndescription: no name\n---\nx")
	f.write(t, filepath.Join(f.root, "opencode.json"), `{"skills": {"paths": ["../extra"]}}`)
	cfg, err := f.loader("").Load(f.loc)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cfg.Skills(func(k string) string { return f.env[k] })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Skill{}
	var names []string
	for _, s := range list {
		got[s.Name] = s
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "alpha,beta,deep,extra,gamma" {
		t.Fatalf("skills %v", names)
	}
	if got["alpha"].Description != "project claude continued" || got["alpha"].Content != "A2" {
		t.Fatalf("alpha %+v: the project's should override the global one", got["alpha"])
	}
	if got["beta"].Location != near || got["beta"].Content != "B body" || got["beta"].Dir() != filepath.Dir(near) {
		t.Fatalf("beta %+v", got["beta"])
	}
	f.env[EnvDisableClaudeCodeSkills] = "1"
	list, _ = cfg.Skills(func(k string) string { return f.env[k] })
	for _, s := range list {
		if s.Name == "alpha" {
			t.Fatal(".claude skills read with OPENCODE_DISABLE_CLAUDE_CODE_SKILLS")
		}
	}
}
