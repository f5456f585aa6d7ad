package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
)

// Config is one simulation run.
type Config struct {
	Seed     uint64
	Sessions int // default 8
	Steps    int // steps over all sessions; default 10,000
	// Break deliberately breaks one rule of the shell, to show that the
	// invariants catch it: "" (none), "promote-early" (a queued prompt is
	// promoted with the steers), "rerun-tool" (a tool left running by a
	// crash is run again instead of failed as interrupted),
	// "keep-questions" (a promotion leaves the open questions undismissed).
	Break string
}

// Result counts what a run exercised.
type Result struct {
	Steps, Events, Turns, Promotions, ToolCalls, Crashes, StaleRefused, Interrupts, Drains, Moves, Replies int
	// Titles counts the title requests answered (Ready.Title, TitleGenerated).
	Titles int
	// Commands: client renames and switches (written alone, whatever is carried).
	Commands int
	// Questions: question requests asked; Answers: client replies to them
	// taken (answers and dismissals; a promotion's dismissals are not counted).
	Questions, Answers int
	// Reverts: revert commands answered or refused; Restores: their file
	// restores run (an activation's too), RestoreCrashes those a crash
	// interrupted.
	Reverts, Restores, RestoreCrashes int
}

// Add counts o's run into r (a total over seeds).
func (r *Result) Add(o Result) {
	r.Steps += o.Steps
	r.Events += o.Events
	r.Turns += o.Turns
	r.Promotions += o.Promotions
	r.ToolCalls += o.ToolCalls
	r.Crashes += o.Crashes
	r.StaleRefused += o.StaleRefused
	r.Interrupts += o.Interrupts
	r.Drains += o.Drains
	r.Titles += o.Titles
	r.Moves += o.Moves
	r.Replies += o.Replies
	r.Commands += o.Commands
	r.Questions += o.Questions
	r.Answers += o.Answers
	r.Reverts += o.Reverts
	r.Restores += o.Restores
	r.RestoreCrashes += o.RestoreCrashes
}

// Violation is an invariant that did not hold, with what replays it.
type Violation struct {
	Config  Config // the run's configuration, defaults filled in
	Step    int
	Session string
	Err     error
}

func (v *Violation) Error() string {
	c := v.Config
	cmd := fmt.Sprintf("sessionrt chaos --mode sim --seed %d --steps %d --sessions %d", c.Seed, v.Step+1, c.Sessions)
	if c.Break != "" {
		cmd += " --break " + c.Break
	}
	return fmt.Sprintf("seed %d step %d session %s: %v (replay: %s)", c.Seed, v.Step, v.Session, v.Err, cmd)
}

func (v *Violation) Unwrap() error { return v.Err }

// Run drives cfg.Sessions sessions through the real core for cfg.Steps
// steps, choosing every input and fault from the seed, and checks the
// invariants after each step. The same Config gives the same run.
func Run(cfg Config) (Result, error) {
	if cfg.Sessions <= 0 {
		cfg.Sessions = 8
	}
	if cfg.Steps <= 0 {
		cfg.Steps = 10_000
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	var res Result
	ss := make([]*simSession, cfg.Sessions)
	for i := range ss {
		ss[i] = newSimSession(fmt.Sprintf("ses_%d", i), rng, &res, cfg.Break)
	}
	for step := 0; step < cfg.Steps; step++ {
		s := ss[rng.IntN(len(ss))]
		err := s.step()
		if err == nil {
			err = s.check()
		}
		res.Steps++
		if err != nil {
			return res, &Violation{Config: cfg, Step: step, Session: s.id, Err: err}
		}
	}
	for _, s := range ss {
		res.Events += len(s.j.events)
	}
	return res, nil
}

// errFenced is the journal's refusal of a stale owner's append.
var errFenced = errors.New("journal fenced: ownership epoch superseded")

// journal is one session's in-memory journal: one transaction per append,
// fenced by the ownership epoch.
type journal struct {
	events []messages.Event
	epoch  int64
	// replica is the journal's own projection: every event it takes is
	// folded into it in seq order, independently of any owner.
	replica session.State
	err     error // the first event the replica refused
}

func (j *journal) append(epoch int64, evs []messages.Event) error {
	if epoch != j.epoch {
		return errFenced
	}
	for _, ev := range evs {
		j.events = append(j.events, ev)
		if err := j.replica.Apply(int64(len(j.events)), ev); err != nil && j.err == nil {
			j.err = fmt.Errorf("the journal's projection refused seq %d: %w", len(j.events), err)
		}
	}
	return nil
}

// phase is where the shell's drain is.
type phase int

const (
	idle       phase = iota
	observing        // an observation is outstanding
	streaming        // a provider turn streams, its tools run
	compacting       // a compaction's summary request runs
)

type toolKey struct{ turn, call string }

// simSession is one session: its journal, and the owner (shell + core)
// that works on it until a crash replaces it.
type simSession struct {
	id    string
	rng   *rand.Rand
	res   *Result
	brk   string
	j     journal
	owner *owner
	// ledger of what the journal shows, for the invariants
	delivery map[string]messages.Delivery
	// streamed is the text each turn's deltas published (Ready.Live).
	streamed  map[string]string
	promoted  map[string]int
	called    map[toolKey]int
	settled   map[toolKey]int
	nextID    int
	turnLimit int
	// autoCompaction is the owners' configuration (session.Config): an
	// overflow compacts once and retries once, or ends the drain.
	autoCompaction bool
	// compactions started in the current logical turn
	compactions int
	// fullCheckDue: a crash or an end of a drain happened since the last
	// full check.
	fullCheckDue bool
	// titleAsks counts the title requests over every owner: one at most
	// (again once a finalized revert hid every prompt: write).
	titleAsks int
	// clientTitled: the client named the session (no generated title may
	// be written after it).
	clientTitled bool
	// questions are the question requests asked (request ID to the call
	// that asked), closed how often each was replied to or dismissed.
	questions map[string]toolKey
	closed    map[string]int
	// source is which of two values the session's one context source
	// has (observations): the world's, across owners.
	source int
	// listed counts how often a Ready.Settled named each call, over
	// every owner; questionCalls are the question calls the shell asked
	// the user about instead of running (never executed, so an observer
	// has nothing of theirs to record).
	listed        map[toolKey]int
	questionCalls map[toolKey]bool
	// readyErr is the first Ready that broke the Settled rule
	// (stepCore), reported by check.
	readyErr error
	// files is the tree the Location's files are (the world's, across
	// owners): a restore makes them its tree.
	files string
}

// owner is one activation: its epoch, its core and its drain's plumbing.
type owner struct {
	epoch int64
	core  session.Core
	phase phase
	init  bool // the outstanding observation is for a first baseline
	turn  string
	// compaction is the ID of the compaction whose summary runs.
	compaction string
	calls      []string
	open       map[string]bool // calls started and not settled
	streamD    bool            // the stream ended
	streamE    string          // how: "" ok, "error", "filter", "overflow", "no-finish"
	// continuation: the last turn's results need an answer (the sim's own
	// record, to check the queue rule against)
	continuation bool
	turnsSince   int // turns since the allowance was last reset
	// checked: prompts whose promotion the queue rule was checked on (a
	// promotion stays carried across steps until it is written)
	checked map[string]bool
	// titling: this owner's title request is out (a crash loses it).
	titling bool
	// asks are the permission requests of the turn in flight not replied
	// to yet (request ID to call ID), and replied those replied to.
	asks, replied map[string]string
}

func newSimSession(id string, rng *rand.Rand, res *Result, brk string) *simSession {
	s := &simSession{id: id, rng: rng, res: res, brk: brk, delivery: map[string]messages.Delivery{}, streamed: map[string]string{}, promoted: map[string]int{},
		called: map[toolKey]int{}, settled: map[toolKey]int{}, turnLimit: 2 + rng.IntN(4), autoCompaction: rng.IntN(4) > 0,
		questions: map[string]toolKey{}, closed: map[string]int{}, listed: map[toolKey]int{}, questionCalls: map[toolKey]bool{}}
	s.j.replica = session.NewState(id)
	s.activate()
	s.must(s.write(messages.SessionCreated{Location: "/loc", Agent: "build", Model: messages.ModelRef{Provider: "sim", ID: "m"}}))
	return s
}

// observations are what the session's one context source gives: one
// value, another, or the source unavailable. Observations are immutable:
// they are made once (Observe runs the loaders on goroutines).
var observations = sync.OnceValue(func() [3]contextsources.Observation {
	var obs [3]contextsources.Observation
	for i, v := range []string{"a", "b", ""} {
		src := contextsources.MustMake(contextsources.Spec[string]{
			Key: "sim/source",
			Load: func(context.Context) contextsources.Result[string] {
				if v == "" {
					return contextsources.Unavailable[string](errors.New("source down"))
				}
				return contextsources.Present(v)
			},
			Baseline: func(v string) string { return "source " + v },
		})
		sc, err := contextsources.New(src)
		if err != nil {
			panic(err)
		}
		obs[i] = sc.Observe(context.Background(), contextsources.ObserveConfig{})
	}
	return obs
})

func (s *simSession) id_(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s%d", prefix, s.nextID)
}

func (s *simSession) must(err error) {
	if err != nil {
		panic(err)
	}
}

// activate starts a new owner: it takes a newer ownership epoch and
// rebuilds its state by replaying the journal.
func (s *simSession) activate() {
	s.j.epoch++
	st := session.NewState(s.id)
	for i, ev := range s.j.events {
		if err := st.Apply(int64(i+1), ev); err != nil {
			panic(fmt.Sprintf("replay of %s: %v", s.id, err))
		}
	}
	s.owner = &owner{epoch: s.j.epoch, core: session.Core{State: st, Config: session.Config{Compaction: simCompaction(s.autoCompaction)}}, open: map[string]bool{}, checked: map[string]bool{}}
}

// write appends events as the current owner and folds them into its state.
func (s *simSession) write(evs ...messages.Event) error {
	o := s.owner
	if err := s.checkTransaction(evs); err != nil {
		return err
	}
	if err := s.j.append(o.epoch, evs); err != nil {
		return err
	}
	first := int64(len(s.j.events) - len(evs) + 1)
	for i, ev := range evs {
		if err := s.ledger(o, ev); err != nil {
			return err
		}
		if err := o.core.State.Apply(first+int64(i), ev); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		if _, ok := ev.(messages.RevertFinalized); ok && !slices.ContainsFunc(s.j.replica.History.Msgs, func(m messages.Message) bool { return m.Role == messages.RoleUser }) {
			// A revert hid every prompt for good: the next one promoted is
			// the first again, and an untitled session is named from it.
			s.titleAsks = 0
		}
	}
	return nil
}

// checkTransaction checks scenario 41 on one transaction before it is
// written: a promotion is written only with the TurnStarted of the turn
// that answers it, never with the drain's end, an interrupt, a move, a
// client's command, nor with a compaction or a fresh baseline before that
// turn (the prompt stays pending if the drain ends first), and a drain
// whose session moved starts no turn and initializes no epoch.
func (s *simSession) checkTransaction(evs []messages.Event) error {
	o := s.owner
	promoted, ends, opens := false, "", false
	asking := make(map[string]bool, len(s.j.replica.Questions))
	for id := range s.j.replica.Questions {
		asking[id] = true
	}
	for _, ev := range evs {
		switch ev := ev.(type) {
		case messages.QuestionReplied:
			delete(asking, ev.RequestID)
		case messages.QuestionRejected:
			delete(asking, ev.RequestID)
		case messages.PromptPromoted:
			// The user spoke instead of answering: every open question is
			// dismissed before the prompt becomes model-visible.
			for id := range asking {
				return fmt.Errorf("prompt %v promoted while question %s is open, without its dismissal before it", ev.MessageIDs, id)
			}
			promoted = true
		case messages.Idle:
			ends = "idle"
		case messages.Interrupted:
			ends = "interrupted"
		case messages.Moved:
			ends = "moved"
		case messages.TextEnded:
			if ev.Text != s.streamed[ev.AssistantMessageID] {
				return fmt.Errorf("turn %s stored text %q, its deltas published %q", ev.AssistantMessageID, ev.Text, s.streamed[ev.AssistantMessageID])
			}
		case messages.TurnStarted, messages.ContextEpochInitialized:
			if _, ok := ev.(messages.TurnStarted); ok {
				// The model is never asked again while a question of its
				// is open: a promotion or an explicit run dismisses it first.
				for id := range asking {
					return fmt.Errorf("turn %s started while question %s is open", ev.(messages.TurnStarted).AssistantMessageID, id)
				}
				opens = true
			}
			if d := o.core.Drain; d != nil && d.Location != o.core.State.Row.Location {
				return fmt.Errorf("%s written at %s after the session moved to %s", ev.EventType().Name, d.Location, o.core.State.Row.Location)
			}
		}
	}
	if promoted && ends != "" {
		return fmt.Errorf("a promotion written with %s, for a turn that never starts", ends)
	}
	if promoted && !opens {
		// A compaction or a fresh baseline before the turn, a client's
		// rename or switch, a permission request, a title: none may
		// carry the promotion ahead of its turn.
		return fmt.Errorf("a promotion written without its turn's TurnStarted: %v", eventNames(evs))
	}
	return nil
}

func eventNames(evs []messages.Event) []string {
	names := make([]string, len(evs))
	for i, ev := range evs {
		names[i] = ev.EventType().Name
	}
	return names
}

// step takes one seeded action.
func (s *simSession) step() error {
	o := s.owner
	r := s.rng.IntN(100)
	switch {
	case r < 4:
		return s.crash()
	case r < 16:
		// Admission (through the journal, by whichever owner is active).
		dl := messages.Steer
		if s.rng.IntN(2) == 0 {
			dl = messages.Queue
		}
		id := s.id_("u")
		s.delivery[id] = dl
		return s.write(messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: dl})
	case r < 22:
		// A wake or a run, during a drain too (wakes coalesce into one
		// follow-up drain; a run is served by the drain in progress).
		var in session.Input = session.Wake{}
		switch s.rng.IntN(6) {
		case 0, 1:
			in = session.Run{}
		case 2:
			in = session.Wake{Owed: true} // a takeover's or the journal's
		}
		return s.stepChecked(in)
	case r < 24:
		if o.core.Drain != nil && !o.core.Drain.Interrupted {
			s.res.Interrupts++
			return s.stepChecked(session.Interrupt{Waiting: o.phase == observing})
		}
		return nil
	case r < 25:
		// A client moves the session (between two Locations).
		to := "/p"
		if o.core.State.Row.Location == to {
			to = "/q"
		}
		s.res.Moves++
		return s.stepChecked(session.Move{To: to})
	case r < 27 && o.titling:
		return s.titled()
	case r < 28:
		// A client renames the session or switches its agent or model,
		// whenever (during a drain too).
		var in session.Input
		switch s.rng.IntN(3) {
		case 0:
			in = session.Rename{Title: s.id_("title")}
		case 1:
			in = session.SwitchAgent{Agent: []string{"build", "plan"}[s.rng.IntN(2)]}
		default:
			in = session.SwitchModel{Model: messages.ModelRef{Provider: "sim", ID: []string{"m", "m2"}[s.rng.IntN(2)]}}
		}
		return s.clientCommand(in)
	case r < 30 && len(s.questions) > 0:
		return s.answer()
	case r < 32:
		return s.revert()
	}
	return s.progress()
}

// titled answers the owner's title request, whenever in its drain (or
// after it): rarely it failed (nothing comes back), sometimes the client
// renamed the session first. A generated title names an untitled session
// and never replaces a client's.
func (s *simSession) titled() error {
	o := s.owner
	o.titling = false
	if s.rng.IntN(5) == 0 {
		return nil // the request failed: the session keeps its default
	}
	if s.rng.IntN(3) == 0 {
		if err := s.clientCommand(session.Rename{Title: "client's"}); err != nil {
			return err
		}
	}
	before := o.core.State.Row.Title
	s.res.Titles++
	if err := s.stepChecked(session.TitleGenerated{Title: "generated"}); err != nil {
		return err
	}
	carried := false
	for _, ev := range o.core.Carry {
		carried = carried || ev == messages.Event(messages.SessionRenamed{Title: "generated"})
	}
	switch got := o.core.State.Row.Title; {
	case before != "" && (got != before || carried):
		return fmt.Errorf("a generated title replaces the client's %q (now %q, carried %v)", before, got, carried)
	case before == "" && got != "generated" && !carried:
		return fmt.Errorf("an untitled session answered by the title model is titled %q, and no title is carried", got)
	}
	return nil
}

// clientCommand steps a client's rename or switch: its events are written
// alone, and what the core carries stays carried (less a generated title,
// which a client's rename replaces).
func (s *simSession) clientCommand(in session.Input) error {
	o := s.owner
	carried := len(o.core.Carry)
	rd := s.stepCore(in)
	if rd.Refused != nil {
		return fmt.Errorf("%T refused: %s", in, rd.Refused.Err)
	}
	if err := s.exec(rd); err != nil {
		return err
	}
	_, rename := in.(session.Rename)
	for _, ev := range o.core.Carry {
		if _, ok := ev.(messages.SessionRenamed); ok && rename {
			return fmt.Errorf("a generated title is still carried after the client's rename")
		}
	}
	if !rename && len(o.core.Carry) != carried {
		return fmt.Errorf("%T changed what is carried", in)
	}
	s.res.Commands++
	return nil
}

func (s *simSession) startDrain(run, cont bool) error {
	o := s.owner
	s.res.Drains++
	o.core.Drain = &session.Drain{Location: o.core.State.Row.Location, RunOwed: run, Continuation: cont}
	o.turnsSince = 0
	o.continuation = cont
	// The Location answers, or (rarely) fails.
	in := session.LocationResolved{TurnLimit: s.turnLimit}
	switch s.rng.IntN(60) {
	case 0:
		in.Err = "location unavailable"
	case 1:
		in.ConfigErr = "agent not configured"
	}
	return s.stepChecked(in)
}

// stepChecked steps the core with in, checks the queue rule on what it
// decided, and executes the Ready.
func (s *simSession) stepChecked(in session.Input) error {
	o := s.owner
	owed := o.continuation
	pendingSteer := false
	for _, p := range o.core.State.Pending {
		pendingSteer = pendingSteer || p.Delivery == messages.Steer
	}
	held := len(o.core.State.Pending) > 0
	for _, p := range o.core.State.Pending {
		held = held && p.Held
	}
	idle := o.core.Drain == nil
	rd := s.stepCore(in)
	if w, ok := in.(session.Wake); ok && w.Owed && idle && held && rd.StartDrain != nil {
		return fmt.Errorf("an owed wake started a drain for held input only")
	}
	if s.brk == "promote-early" {
		s.breakPromoteEarly(rd)
	}
	if s.brk == "keep-questions" {
		s.breakKeepQuestions()
	}
	if err := s.checkPromotions(rd, owed, pendingSteer); err != nil {
		return err
	}
	return s.exec(rd)
}

// checkPromotions checks the queue rule on the promotions a step decided
// (once each, when decided): a queued prompt is promoted alone, with no
// continuation owed and no steer pending.
func (s *simSession) checkPromotions(rd session.Ready, owed, pendingSteer bool) error {
	o := s.owner
	for _, ev := range append(append([]messages.Event(nil), rd.Append...), o.core.Carry...) {
		p, ok := ev.(messages.PromptPromoted)
		if !ok || len(p.MessageIDs) == 0 || o.checked[p.MessageIDs[0]] {
			continue
		}
		for _, id := range p.MessageIDs {
			o.checked[id] = true
			if s.delivery[id] == messages.Queue && (len(p.MessageIDs) > 1 || owed || pendingSteer) {
				return fmt.Errorf("queued prompt %s promoted early (with %v, continuation owed %v, steer pending %v)", id, p.MessageIDs, owed, pendingSteer)
			}
		}
		o.turnsSince = 0
	}
	return nil
}

// breakPromoteEarly is the deliberately broken rule: every pending prompt,
// queued ones too, rides along with a promotion.
func (s *simSession) breakPromoteEarly(rd session.Ready) {
	o := s.owner
	for i, ev := range o.core.Carry {
		if p, ok := ev.(messages.PromptPromoted); ok {
			var ids []string
			for _, in := range o.core.State.Pending {
				ids = append(ids, in.MessageID)
			}
			o.core.Carry[i] = messages.PromptPromoted{MessageIDs: ids}
			_ = p
		}
	}
}

// breakKeepQuestions is the deliberately broken rule: a promotion leaves
// the open questions as they are (their carried dismissals are dropped).
func (s *simSession) breakKeepQuestions() {
	o := s.owner
	o.core.Carry = slices.DeleteFunc(o.core.Carry, func(ev messages.Event) bool {
		switch ev := ev.(type) {
		case messages.QuestionRejected:
			return ev.Reason == session.DismissedByPromptReason || ev.Reason == session.DismissedByRunReason
		case messages.ToolFailed:
			return ev.Error == session.DismissedByPromptError || ev.Error == session.DismissedByRunError
		}
		return false
	})
}

// answer is a client's reply to a question request, open or closed (a
// second reply), rarely to one never asked: taken iff the request is open
// and no promotion is dismissing it. An answer while idle starts a drain
// for the model to continue from it (a dismissal starts none); a
// dismissal of the turn in flight's question stops its drain.
func (s *simSession) answer() error {
	o := s.owner
	ids := make([]string, 0, len(s.questions))
	for id := range s.questions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := ids[s.rng.IntN(len(ids))]
	if s.rng.IntN(10) == 0 {
		id = "que_never_asked"
	}
	_, open := s.j.replica.Questions[id]
	dismissing := slices.ContainsFunc(o.core.Carry, func(ev messages.Event) bool {
		r, ok := ev.(messages.QuestionRejected)
		return ok && r.RequestID == id
	})
	d := o.core.Drain
	idle := d == nil
	inFlight := d != nil && d.Turn != nil && d.Turn.AssistantMessageID == s.questions[id].turn
	// others: the model asked more questions in that turn, still open: it
	// continues once all are answered.
	others := false
	for other, q := range s.j.replica.Questions {
		others = others || other != id && q.AssistantMessageID == s.questions[id].turn && !slices.ContainsFunc(o.core.Carry, func(ev messages.Event) bool {
			r, ok := ev.(messages.QuestionRejected)
			return ok && r.RequestID == other
		})
	}
	reject := s.rng.IntN(3) == 0
	wasOwed := d != nil && d.RunOwed
	rd := s.stepCore(session.QuestionReply{RequestID: id, Answers: [][]string{{"blue"}}, Reject: reject})
	if taken := len(rd.Append) > 0; taken != (open && !dismissing) {
		return fmt.Errorf("question reply to %s taken %v, request open %v, its dismissal carried %v", id, taken, open, dismissing)
	}
	if !open || dismissing {
		return nil
	}
	s.res.Answers++
	switch {
	case idle && reject && rd.StartDrain != nil:
		return fmt.Errorf("a dismissed question started a drain")
	case !inFlight && !reject && others && (rd.StartDrain != nil || !idle && d.RunOwed && !wasOwed):
		return fmt.Errorf("an answer to question %s started the model while %d other questions of its turn are open", id, len(s.j.replica.Questions)-1)
	case others:
	case idle && !reject && rd.StartDrain == nil:
		return fmt.Errorf("an answer while idle started no drain for the model to read it")
	case inFlight && reject && !d.Interrupted:
		return fmt.Errorf("question %s of the turn in flight dismissed and the drain goes on", id)
	case !idle && !inFlight && !reject && !d.RunOwed:
		// The drain running now did not ask it: without an owed attempt
		// its next boundary may end it, and the model never reads the
		// answer until the client speaks again.
		return fmt.Errorf("an answer to question %s of an earlier turn owes the running drain no provider attempt", id)
	}
	return s.exec(rd)
}

// exec is the shell: Append first, then the effect.
func (s *simSession) exec(rd session.Ready) error {
	o := s.owner
	if len(rd.Append) > 0 {
		if err := s.write(rd.Append...); err != nil {
			return err
		}
	}
	if rd.Title != nil {
		// Once per session, across owners: the first prompt is promoted
		// once, and a title is never asked for over one.
		s.titleAsks++
		if s.titleAsks > 1 || s.j.replica.Row.Title != "" || rd.Title.Prompt == "" || !rd.Stream {
			return fmt.Errorf("title request %d (session titled %q, prompt %q, with the turn's stream %v)", s.titleAsks, s.j.replica.Row.Title, rd.Title.Prompt, rd.Stream)
		}
		o.titling = true
	}
	if rd.StartDrain != nil {
		if o.core.Drain != nil {
			return fmt.Errorf("a drain started while one runs")
		}
		if !rd.StartDrain.Run && !rd.StartDrain.Continue && len(o.core.State.Pending) == 0 {
			return fmt.Errorf("a wake started a drain with nothing pending")
		}
		return s.startDrain(rd.StartDrain.Run, rd.StartDrain.Continue)
	}
	for _, c := range rd.StartTools {
		if o.open[c.CallID] {
			return fmt.Errorf("call %s started while it runs", c.CallID)
		}
		o.calls = append(o.calls, c.CallID)
		s.res.ToolCalls++
		if c.Tool == session.QuestionTool {
			s.questionCalls[toolKey{c.AssistantMessageID, c.CallID}] = true
			// The shell asks the user instead of running a tool: the call
			// stays open, across drains and owners, until a reply or a
			// promotion closes it.
			rq := s.stepCore(session.QuestionAsked{RequestID: s.id_("que"), Call: c})
			if err := s.exec(rq); err != nil {
				return err
			}
			continue
		}
		o.open[c.CallID] = true
	}
	if rd.Cancel {
		if err := s.cancel(); err != nil {
			return err
		}
	}
	if rd.TurnOver {
		if o.phase != streaming {
			return nil // the cancellation already finished it
		}
		return s.finishTurn()
	}
	switch {
	case rd.Stop:
		o.core.Drain, o.phase = nil, idle
	case rd.Outcome != nil:
		// Its last events were in Append: Idle (none when Busy: the
		// session stays busy for the drain that answers its last tool
		// results), after DrainFailed, or Interrupted.
		if rd.Outcome.Kind == session.Moved && o.continuation && !rd.Busy {
			return fmt.Errorf("a moved drain dropped its last turn's tool results (no drain at the destination answers them)")
		}
		if len(o.core.Carry) > 0 {
			return fmt.Errorf("the drain ended with %d events still carried", len(o.core.Carry))
		}
		if err := checkEnding(rd); err != nil {
			return err
		}
		return s.endDrain()
	case rd.Observe != nil:
		o.phase, o.init = observing, rd.Observe.Init
	case rd.StartTurn != nil:
		if rd.StartTurn.Tools == o.core.Drain.LastTurn {
			return fmt.Errorf("the turn starts with tools %v, last allowed turn %v", rd.StartTurn.Tools, o.core.Drain.LastTurn)
		}
		o.turn, o.calls, o.streamD, o.streamE = s.id_("a"), nil, false, ""
		o.asks, o.replied = nil, nil // an earlier turn's requests are closed to replies
		clear(o.open)
		// The request is built: rarely over budget (the core compacts
		// first, once per logical turn, and never with automatic
		// compaction off).
		est := 1
		if s.rng.IntN(15) == 0 {
			est = 2 * simWindow
		}
		rd := s.stepCore(session.TurnBuilt{Started: messages.TurnStarted{AssistantMessageID: o.turn, Agent: "build"}, Limits: session.Limits{Window: simWindow}, Estimate: est})
		if rd.Compact != nil && (!s.autoCompaction || est < simWindow) {
			return fmt.Errorf("turn %s: compacted before the turn with auto=%v, estimate %d", o.turn, s.autoCompaction, est)
		}
		return s.exec(rd)
	case rd.Stream:
		if o.core.Drain.Turn == nil || o.core.Drain.Turn.AssistantMessageID != o.turn {
			return fmt.Errorf("the core streams a turn it did not open")
		}
		o.phase = streaming
		s.res.Turns++
		o.turnsSince++
		if o.turnsSince > max(o.core.Drain.TurnLimit, 1) {
			return fmt.Errorf("%d turns since the allowance was reset, limit %d", o.turnsSince, o.core.Drain.TurnLimit)
		}
	case rd.Compact != nil:
		// The core plans from the real history (nothing to compact
		// while it is short); rarely the summary has no provider or the
		// model's window is too small for the summary request.
		in := session.CompactionFacts{ID: s.id_("cmp"), Limits: session.Limits{Window: simWindow}}
		switch s.rng.IntN(20) {
		case 0:
			in = session.CompactionFacts{Err: "no provider serves the model"}
		case 1:
			in.Limits.Window = 1
		}
		return s.exec(s.stepCore(in))
	case rd.Summarize != nil:
		o.phase, o.compaction = compacting, rd.Summarize.ID
	}
	return nil
}

// cancel is the shell's part of an interrupt: the running tools are
// killed and each settles as interrupted, and the stream ends.
func (s *simSession) cancel() error {
	o := s.owner
	if o.phase != streaming {
		return nil // an observation is outstanding: its return finishes the interrupt
	}
	turn := o.turn
	for _, c := range append([]string(nil), o.calls...) {
		if o.open[c] && o.turn == turn && o.phase == streaming {
			if err := s.settle(c, false, false); err != nil {
				return err
			}
		}
	}
	if o.phase == streaming && o.turn == turn && !o.streamD {
		o.streamD = true
		return s.exec(s.stepCore(session.StreamEnded{}))
	}
	return nil
}

// checkEnding checks the events an Outcome's Append ends with: Idle last
// (none when Busy), after Interrupted for an interrupt, after one
// DrainFailed of the outcome's kind for a failure, and for a completed or
// moved drain neither.
func checkEnding(rd session.Ready) error {
	evs, out := rd.Append, rd.Outcome
	idles, failed, interrupted := 0, 0, false
	for _, ev := range evs {
		switch ev := ev.(type) {
		case messages.Idle:
			idles++
		case messages.DrainFailed:
			failed++
			if ev.Kind != string(out.Kind) || ev.Message != out.Err {
				return fmt.Errorf("drain ended %s %q, wrote DrainFailed %s %q", out.Kind, out.Err, ev.Kind, ev.Message)
			}
		case messages.Interrupted:
			interrupted = true
		}
	}
	idleLast := false
	if n := len(evs); n > 0 {
		_, idleLast = evs[n-1].(messages.Idle)
	}
	wantFailed := 0
	switch out.Kind {
	case session.Completed, session.Moved, session.Interrupted:
	default:
		if out.Err != "" {
			wantFailed = 1
		}
	}
	switch {
	case rd.Busy && idles > 0:
		return fmt.Errorf("a drain that keeps the session busy wrote Idle: %v", eventNames(evs))
	case !rd.Busy && (idles != 1 || !idleLast):
		return fmt.Errorf("drain ended %s without Idle last: %v", out.Kind, eventNames(evs))
	case interrupted != (out.Kind == session.Interrupted):
		return fmt.Errorf("drain ended %s, Interrupted written %v: %v", out.Kind, interrupted, eventNames(evs))
	case failed != wantFailed:
		return fmt.Errorf("drain ended %s %q with %d DrainFailed: %v", out.Kind, out.Err, failed, eventNames(evs))
	}
	return nil
}

func (s *simSession) endDrain() error {
	o := s.owner
	o.core.Drain, o.phase, o.turn, o.calls = nil, idle, "", nil
	s.fullCheckDue = true
	for _, p := range o.core.State.Pending {
		// Decided but never written (the drain ended before its turn):
		// the next drain decides it afresh.
		delete(o.checked, p.MessageID)
	}
	for k, open := range o.open {
		if open {
			return fmt.Errorf("the drain ended with call %s unsettled", k)
		}
	}
	// A wake that arrived meanwhile starts at most one follow-up drain.
	return s.exec(s.stepCore(session.DrainEnded{}))
}

// reply is a client's reply to a permission request of the turn in
// flight, open or already answered (a second reply): taken only once, and
// a reject without feedback stops the drain once its call settles (the
// tool fails at once: the reply is what it waited for).
func (s *simSession) reply() error {
	o := s.owner
	ids := make([]string, 0, len(o.asks)+len(o.replied))
	for id := range o.asks {
		ids = append(ids, id)
	}
	for id := range o.replied {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := ids[s.rng.IntN(len(ids))]
	r := messages.PermissionReplied{RequestID: id, Reply: []messages.PermissionReply{messages.ReplyOnce, messages.ReplyAlways, messages.ReplyReject}[s.rng.IntN(3)]}
	if r.Reply == messages.ReplyReject && s.rng.IntN(2) == 0 {
		r.Feedback = "not that"
	}
	rd := s.stepCore(session.PermissionReplied{Replied: r})
	call, open := o.asks[id]
	if taken := rd.Answer != nil; taken != open {
		return fmt.Errorf("permission reply to %s taken %v, request open %v", id, taken, open)
	}
	if !open {
		return nil
	}
	s.res.Replies++
	delete(o.asks, id)
	o.replied[id] = call
	if err := s.exec(rd); err != nil {
		return err
	}
	if r.Reply != messages.ReplyReject || !o.open[call] || o.phase != streaming {
		return nil
	}
	if err := s.settle(call, false, false); err != nil {
		return err
	}
	if d := o.core.Drain; r.Feedback == "" && d != nil && !d.Interrupted {
		return fmt.Errorf("call %s rejected without feedback settled and the drain goes on", call)
	}
	return nil
}

// progress moves the drain's outstanding work one step.
func (s *simSession) progress() error {
	o := s.owner
	switch o.phase {
	case observing:
		// The observation comes back: unchanged, with an update or a
		// fresh baseline, blocked (the drain ends, the prompts stay
		// pending), or with the agent gone from the configuration; its
		// tool catalog with it unless the turn is the last allowed.
		o.phase = idle
		in := session.ContextObserved{Init: o.init, TurnLimit: s.turnLimit}
		switch r := s.rng.IntN(40); {
		case r < 1:
			in.Err = "source unavailable"
		case r < 2:
			// The source is down: a baseline (a fresh one too) is blocked,
			// an update keeps the value the model last saw.
			in.Observation = observations()[2]
		case r < 3:
			in.ConfigErr = "agent not configured"
		default:
			if r < 10 {
				s.source ^= 1
			}
			in.Observation, in.UpdateID = observations()[s.source], s.id_("ctx")
		}
		if !o.init && !o.core.Drain.LastTurn {
			in.Catalog = true
			if s.rng.IntN(60) == 0 {
				in.CatalogErr = "registry stopped"
			}
		}
		return s.stepChecked(in)
	case compacting:
		// The summary comes back (rarely failed).
		o.phase = idle
		in := session.CompactionDone{ID: o.compaction, Summary: "summary of " + o.compaction}
		if s.rng.IntN(15) == 0 {
			in = session.CompactionDone{ID: o.compaction, Err: "provider 503"}
		}
		return s.exec(s.stepCore(in))
	case streaming:
		open := 0
		for _, c := range o.calls {
			if o.open[c] {
				open++
			}
		}
		if o.streamD && open == 0 {
			return fmt.Errorf("turn %s: the stream ended and every call settled, but the core did not say the turn was over", o.turn)
		}
		if len(o.calls) > 0 && s.rng.IntN(12) == 0 {
			// A call asks for permission: taken only while it runs.
			c := o.calls[s.rng.IntN(len(o.calls))]
			rd := s.stepCore(session.PermissionAsked{Asked: messages.PermissionAsked{RequestID: s.id_("per"), AssistantMessageID: o.turn, CallID: c, Action: "bash"}})
			if taken := len(rd.Append) > 0; taken != o.open[c] {
				return fmt.Errorf("permission ask of call %s taken %v, call running %v", c, taken, o.open[c])
			} else if taken {
				if o.asks == nil {
					o.asks, o.replied = map[string]string{}, map[string]string{}
				}
				o.asks[rd.Append[len(rd.Append)-1].(messages.PermissionAsked).RequestID] = c
			}
			return s.exec(rd)
		}
		if len(o.asks)+len(o.replied) > 0 && s.rng.IntN(6) == 0 {
			return s.reply()
		}
		r := s.rng.IntN(10)
		switch {
		case !o.streamD && r < 3 && len(o.calls) < 4 && !o.core.Drain.LastTurn:
			c := s.id_("call")
			if len(o.calls) > 0 && s.rng.IntN(8) == 0 {
				c = o.calls[s.rng.IntN(len(o.calls))] // a provider repeating a call ID
			}
			interrupted := o.core.Drain.Interrupted
			tool, args := "bash", []byte(nil)
			if s.rng.IntN(6) == 0 {
				tool, args = session.QuestionTool, []byte(`{"questions":[{"question":"which?"}]}`)
			}
			rd := s.stepCore(session.StreamPart{Kind: session.PartToolCall, CallID: c, Tool: tool, Args: args})
			if interrupted && len(rd.StartTools) > 0 {
				return fmt.Errorf("call %s started after the interrupt", c)
			}
			return s.exec(rd)
		case open > 0 && r < 7:
			// A settlement, sometimes delivered twice (the core keeps the
			// first), rarely a rejection that stops the drain.
			for _, c := range o.calls {
				if o.open[c] {
					turn := o.turn
					if err := s.settle(c, s.rng.IntN(4) > 0, s.rng.IntN(40) == 0); err != nil {
						return err
					}
					if s.rng.IntN(10) == 0 && o.turn == turn {
						if err := s.settle(c, true, false); err != nil {
							return err
						}
					}
					break
				}
			}
			return nil
		case !o.streamD:
			o.streamD = true
			switch s.rng.IntN(12) {
			case 0:
				o.streamE = "error"
			case 1:
				o.streamE = "filter"
			case 2:
				o.streamE = "overflow"
			case 3:
				o.streamE = "no-finish"
			}
			// The turn's text streams as a delta first: published live
			// unless an interrupt came, and stored as streamed.
			interrupted := o.core.Drain.Interrupted
			rd := s.stepCore(session.StreamPart{Kind: session.PartText, Text: "text of " + o.turn})
			switch {
			case len(rd.Append) > 0:
				return fmt.Errorf("a delta wrote %d events", len(rd.Append))
			case interrupted && len(rd.Live) > 0:
				return fmt.Errorf("a delta published after the interrupt")
			case !interrupted && (len(rd.Live) != 1 || rd.Live[0].Text != "text of "+o.turn || rd.Live[0].AssistantMessageID != o.turn):
				return fmt.Errorf("the delta of turn %s published as %+v", o.turn, rd.Live)
			}
			for _, d := range rd.Live {
				s.streamed[d.AssistantMessageID] += d.Text
			}
			// Its finish part, unless it failed or was malformed, and its
			// end, with the error the shell met.
			var end session.StreamEnded
			switch o.streamE {
			case "", "filter":
				finish := map[string]string{"": "stop", "filter": "content_filter"}[o.streamE]
				if rd := s.stepCore(session.StreamPart{Kind: session.PartFinish, Finish: finish}); len(rd.Append) > 0 || len(rd.Live) > 0 {
					return fmt.Errorf("the finish part wrote %d events, published %d deltas", len(rd.Append), len(rd.Live))
				}
			case "error":
				end = session.StreamEnded{Err: "503", Kind: provider.KindServerError}
			case "overflow":
				end = session.StreamEnded{Err: "prompt is too long", Kind: provider.KindContextOverflow}
			}
			return s.exec(s.stepCore(end))
		}
		return nil
	}
	return nil
}

// settle delivers a call's settlement to the core (a duplicate too: the
// core must drop it). reject: the user rejected it without feedback.
func (s *simSession) settle(call string, ok, reject bool) error {
	o := s.owner
	first := o.open[call] // a second delivery is dropped
	o.open[call] = false
	in := session.ToolSettled{Result: messages.ToolSucceeded{AssistantMessageID: o.turn, CallID: call, Output: "ok"}}
	if !ok || reject {
		kind := "failed" // the runner's kind, passed through to Ready.Settled
		if reject {
			kind = "rejected"
		}
		in = session.ToolSettled{Result: messages.ToolFailed{AssistantMessageID: o.turn, CallID: call, Error: "failed"}, StopsDrain: reject, Kind: kind}
	}
	if reject && !o.core.Drain.Interrupted {
		s.res.Interrupts++
	}
	rd := s.stepCore(in)
	// The call's unanswered requests are closed with its first settlement
	// (no reply can be acted on any more), and only then.
	var closing []string
	if first {
		for id, c := range o.asks {
			if c == call {
				closing = append(closing, id)
				delete(o.asks, id)
				o.replied[id] = c
			}
		}
		slices.Sort(closing)
	}
	if !slices.Equal(closing, rd.Closed) {
		return fmt.Errorf("call %s settled: closed requests %v, want %v", call, rd.Closed, closing)
	}
	return s.exec(rd)
}

// finishTurn reports the turn's end once the core said it is over.
func (s *simSession) finishTurn() error {
	o := s.owner
	for _, c := range o.calls {
		if o.open[c] {
			return fmt.Errorf("the core said turn %s is over with call %s running", o.turn, c)
		}
	}
	if !o.streamD {
		return fmt.Errorf("the core said turn %s is over while it streams", o.turn)
	}
	pendingSteer := false
	for _, p := range o.core.State.Pending {
		pendingSteer = pendingSteer || p.Delivery == messages.Steer
	}
	// The core ends the turn as its stream said.
	interrupted := o.core.Drain.Interrupted
	rd := s.stepCore(session.CloseTurn{})
	want := session.Provider
	switch o.streamE {
	case "error", "no-finish":
		o.continuation = false
	case "overflow":
		o.continuation, want = false, session.Overflow
		if rd.Compact != nil {
			if !s.autoCompaction {
				return fmt.Errorf("turn %s overflowed: compacted with automatic compaction off", o.turn)
			}
			o.turnsSince-- // the rebuilt attempt is the same logical turn
		}
	default:
		asking := false
		for _, q := range o.core.State.Questions {
			asking = asking || q.AssistantMessageID == o.turn
		}
		o.continuation = len(o.calls) > 0 && o.streamE != "filter" && !asking
		want = ""
	}
	if !interrupted {
		if err := checkTurnEnd(o.turn, want, append(slices.Clone(rd.Append), o.core.Carry...)); err != nil {
			return err
		}
	} else {
		want = session.Interrupted
	}
	// An observer is told the same.
	if te := rd.TurnEnd; te == nil || te.AssistantMessageID != o.turn || te.Kind != want {
		return fmt.Errorf("turn %s closed (failed %q): the observer was told %+v", o.turn, want, te)
	}
	if s.brk == "promote-early" {
		s.breakPromoteEarly(rd)
	}
	if s.brk == "keep-questions" {
		s.breakKeepQuestions()
	}
	o.turn, o.calls = "", nil // the core fails an interrupted turn itself
	o.phase = idle
	if err := s.checkPromotions(rd, o.continuation, pendingSteer); err != nil {
		return err
	}
	return s.exec(rd)
}

// stepCore steps the owner's core with in and checks the Ready's
// Settled, which an observer ends the calls' spans and counts them by:
// checkSettled.
func (s *simSession) stepCore(in session.Input) session.Ready {
	o := s.owner
	rd := o.core.Step(in)
	if err := s.checkSettled(in, rd, o.core.Carry); err != nil && s.readyErr == nil {
		s.readyErr = fmt.Errorf("%T: %w", in, err)
	}
	return rd
}

// checkSettled checks Ready rd, stepped with in, against what it settles
// (carried: the core's Carry after the step). Each call it lists settles
// in Append or carried (the turn's last settlement is written with its
// end), as listed: failed, with its error and with the runner's kind,
// exactly when its event is a ToolFailed. Every settlement written of a
// call the shell ran was listed exactly once, by this Ready or by the one
// that carried it; not listed are the calls the shell never ran
// (questions: answered, rejected or dismissed by the core) and the
// leftovers a new owner fails (nobody observed their end).
func (s *simSession) checkSettled(in session.Input, rd session.Ready, carried []messages.Event) error {
	evs := append(slices.Clone(rd.Append), carried...)
	for _, st := range rd.Settled {
		var found messages.Event
		for _, ev := range evs {
			switch e := ev.(type) {
			case messages.ToolSucceeded:
				if e.CallID == st.CallID {
					found = e
				}
			case messages.ToolFailed:
				if e.CallID == st.CallID {
					found = e
				}
			}
		}
		k := toolKey{s.owner.turn, st.CallID}
		switch e := found.(type) {
		case nil:
			return fmt.Errorf("Ready.Settled lists call %s, whose settlement is neither in Append nor carried", st.CallID)
		case messages.ToolSucceeded:
			k.turn = e.AssistantMessageID
			if st.Err != "" || st.Kind != "" {
				return fmt.Errorf("Ready.Settled lists call %s as failed (%q: %q), its settlement is a ToolSucceeded", st.CallID, st.Kind, st.Err)
			}
		case messages.ToolFailed:
			k.turn = e.AssistantMessageID
			if st.Err != e.Error {
				return fmt.Errorf("Ready.Settled lists call %s with error %q, its ToolFailed says %q", st.CallID, st.Err, e.Error)
			}
		}
		if ts, ok := in.(session.ToolSettled); ok && st.Kind != ts.Kind {
			return fmt.Errorf("Ready.Settled lists call %s with kind %q, its runner said %q", st.CallID, st.Kind, ts.Kind)
		}
		s.listed[k]++
		if s.listed[k] > 1 {
			return fmt.Errorf("Ready.Settled lists call %s of %s a second time", k.call, k.turn)
		}
	}
	if _, ok := in.(session.Leftovers); ok {
		return nil
	}
	for _, ev := range rd.Append {
		var k toolKey
		switch e := ev.(type) {
		case messages.ToolSucceeded:
			k = toolKey{e.AssistantMessageID, e.CallID}
		case messages.ToolFailed:
			k = toolKey{e.AssistantMessageID, e.CallID}
		default:
			continue
		}
		if !s.questionCalls[k] && s.listed[k] != 1 {
			return fmt.Errorf("call %s of %s settles (%T in Append), listed %d times in Ready.Settled", k.call, k.turn, ev, s.listed[k])
		}
	}
	return nil
}

// checkTurnEnd checks that turn ended as its stream said: failed with
// kind (for an error or a stream without a finish reason: provider; for
// an overflow: overflow), or ended ("") with a TurnEnded, written now or
// carried (evs).
func checkTurnEnd(turn string, kind session.OutcomeKind, evs []messages.Event) error {
	for _, ev := range evs {
		switch ev := ev.(type) {
		case messages.TurnEnded:
			if ev.AssistantMessageID == turn && kind == "" {
				return nil
			}
		case messages.TurnFailed:
			if ev.AssistantMessageID == turn && ev.ErrorKind == string(kind) && kind != "" {
				return nil
			}
		}
	}
	return fmt.Errorf("turn %s closed without its end (failed %q) in %d events", turn, kind, len(evs))
}

// crash kills the owner at a random point: its carried events are lost
// (they were never written), a new owner replays the journal, fails what
// the dead one left open (no tool runs again), and resumes a busy session.
// The dead owner's late append is refused by the fence.
func (s *simSession) crash() error {
	s.res.Crashes++
	s.fullCheckDue = true
	s.compactions = 0 // the next owner's drain starts a new logical turn
	dead := s.owner
	s.activate()
	if len(dead.core.Carry) > 0 || s.rng.IntN(2) == 0 {
		// The dead owner's late append is refused by the fence.
		if err := s.j.append(dead.epoch, []messages.Event{messages.Idle{}}); !errors.Is(err, errFenced) {
			return fmt.Errorf("a stale owner's append was not refused: %v", err)
		}
		s.res.StaleRefused++
	}
	o := s.owner
	// Recovery, as the core decides it from the replayed state: the dead
	// owner's tools are killed first (none of its settlements arrives
	// any more), then every call still open fails as interrupted, and the
	// unfinished turn fails, before anything can call a provider.
	rd := s.stepCore(session.Leftovers{Why: "session restarted"})
	if rd.KillTools {
		rd = s.stepCore(session.Leftovers{Why: "session restarted", ToolsKilled: true})
	}
	if rd.KillTools || rd.StartDrain != nil || rd.Outcome != nil {
		return fmt.Errorf("leftovers: %+v: want only an Append", rd)
	}
	evs := rd.Append
	if s.brk == "rerun-tool" {
		// The broken rule: run them again instead.
		for i, ev := range evs {
			if f, ok := ev.(messages.ToolFailed); ok {
				o.turn = f.AssistantMessageID
				evs[i] = messages.ToolCalled{AssistantMessageID: f.AssistantMessageID, CallID: f.CallID, Tool: "bash", Agent: "build"}
			}
		}
	}
	if len(evs) > 0 {
		if err := s.write(evs...); err != nil {
			return err
		}
	}
	if s.brk == "" {
		// Nothing is left open but the calls of open questions (their
		// answer is still awaited), and a second activation finds nothing
		// to close.
		st := &o.core.State
		for k := range st.Calls {
			if !st.QuestionCall(k.AssistantMessageID, k.CallID) {
				return fmt.Errorf("leftovers left call %s of %s open", k.CallID, k.AssistantMessageID)
			}
		}
		if len(st.Asks) > 0 || (len(evs) > 0 && len(st.Turns) > 0) {
			return fmt.Errorf("leftovers left requests %v, turns %v open", st.Asks, st.Turns)
		}
		if rd := s.stepCore(session.Leftovers{Why: "session restarted", ToolsKilled: true}); len(rd.Append) > 0 {
			return fmt.Errorf("leftovers closed twice: %v", rd.Append)
		}
	}
	// A file restore a crash interrupted is finished before anything else
	// can start a drain (which would give it up).
	if err := s.finishRestore(); err != nil {
		return err
	}
	// The restart policy, as the core applies it: resume once (with a
	// note) or, rarely, mark interrupted (the input it leaves is held: no
	// owed wake may run it); a session not mid-drain gets an owed wake.
	interrupt := s.rng.IntN(4) == 0
	return s.stepChecked(session.Recover{Interrupt: interrupt, NoteID: s.id_("ctx"), Note: "restarted"})
}

// revert runs a client's revert command as the shell does: the message's
// position read from the journal first (a user or assistant message, a
// context note, or rarely none), then the core stepped until it answers,
// its Append written and what Ready.Revert asks for done: the snapshot
// facts are the world's (rarely a snapshot the store lacks), a restore
// makes the files its tree, and sometimes the process dies in it. A
// refusal writes nothing; while a drain runs or the session is busy,
// every command that changes something is refused; an answer leaves no
// restore owed, and a committed revert's files those of its snapshot.
func (s *simSession) revert() error {
	ops := []session.RevertOp{session.RevertStage, session.RevertCommit, session.RevertClear, session.RevertShow, session.RevertDiff, "undo"}
	plan := []session.RevertOp{ops[s.rng.IntN(len(ops))]}
	if plan[0] == session.RevertStage && s.rng.IntN(3) > 0 {
		// A client stages and commits at once (and sometimes undoes it).
		plan = append(plan, session.RevertCommit)
		if s.rng.IntN(3) == 0 {
			plan = append(plan, session.RevertClear)
		}
	}
	for _, op := range plan {
		o := s.owner
		if err := s.revertOp(op); err != nil || s.owner != o {
			return err // a violation, or the process died in a restore
		}
	}
	return nil
}

func (s *simSession) revertOp(op session.RevertOp) error {
	o := s.owner
	in := session.RevertCommand{Op: op}
	if op == session.RevertStage || (op == session.RevertDiff && s.rng.IntN(2) == 0) || s.rng.IntN(10) == 0 {
		in.MessageID, in.Message = s.message()
	}
	changes := op == session.RevertStage || op == session.RevertCommit || op == session.RevertClear
	busy := o.core.Drain != nil || o.core.State.Row.Status == session.StatusBusy
	s.res.Reverts++
	for range 8 {
		rd := s.stepCore(in)
		in.Facts = nil
		if r := rd.Refused; r != nil {
			if len(rd.Append) > 0 || rd.Revert != nil {
				return fmt.Errorf("revert %s refused (%s) with %v, %+v", op, r.Err, rd.Append, rd.Revert)
			}
			if busy && changes && r.Kind != session.RefusedBusy {
				return fmt.Errorf("revert %s of a running session refused as %d, not busy: %s", op, r.Kind, r.Err)
			}
			return nil
		}
		if busy && changes {
			return fmt.Errorf("revert %s of a running session taken: %v %+v", op, rd.Append, rd.Revert)
		}
		n := rd.Revert
		if n == nil || rd.StartDrain != nil || rd.Outcome != nil || len(rd.StartTools) > 0 {
			return fmt.Errorf("revert %s: %+v", op, rd)
		}
		if len(rd.Append) > 0 {
			if err := s.write(rd.Append...); err != nil {
				return err
			}
		}
		switch {
		case n.Answer != nil:
			if r := o.core.State.Reverts.Restore; changes && r != nil {
				return fmt.Errorf("revert %s answered with a restore owed (%s)", op, r.Tree)
			}
			if r := o.core.State.Reverts.Open; op == session.RevertCommit && r.Snapshot != "" && len(r.Files) > 0 && s.files != r.Snapshot {
				return fmt.Errorf("revert to %s committed, the files are %q, not its snapshot %s", r.MessageID, s.files, r.Snapshot)
			}
			return nil
		case n.Restore != nil:
			if s.rng.IntN(4) == 0 {
				// The process dies in the restore: the first file only.
				s.res.RestoreCrashes++
				return s.crash()
			}
			if err := s.restore(*n.Restore); err != nil {
				return err
			}
		case n.Read != nil:
			f := &session.SnapshotFacts{From: fmt.Sprintf("tree%d", n.Read.Seq), Current: s.files, Files: []string{"a", "b"}}
			switch s.rng.IntN(20) {
			case 0:
				f = &session.SnapshotFacts{From: f.From, FromMissing: true}
			case 1:
				f.Lost = "tree lost: not found"
			case 2:
				f = &session.SnapshotFacts{} // no snapshots
			}
			in.Facts = f
		case !n.Again:
			return fmt.Errorf("revert %s: Ready.Revert names nothing to do", op)
		}
	}
	return fmt.Errorf("revert %s did not answer in 8 steps", op)
}

// message picks a message of the session's journal, with its position,
// or (rarely) an ID no message has.
func (s *simSession) message() (string, *session.MessageAt) {
	var ids []string
	at := map[string]*session.MessageAt{}
	for i, ev := range s.j.events {
		seq := int64(i + 1)
		switch e := ev.(type) {
		case messages.PromptPromoted:
			for k, id := range e.MessageIDs {
				ids, at[id] = append(ids, id), &session.MessageAt{Seq: seq, Index: k, Role: messages.RoleUser}
			}
		case messages.TurnStarted:
			ids, at[e.AssistantMessageID] = append(ids, e.AssistantMessageID), &session.MessageAt{Seq: seq, Role: messages.RoleAssistant}
		case messages.ContextUpdated:
			ids, at[e.MessageID] = append(ids, e.MessageID), &session.MessageAt{Seq: seq, Role: messages.RoleSystem}
		}
	}
	if len(ids) == 0 || s.rng.IntN(15) == 0 {
		return "nope", nil
	}
	id := ids[s.rng.IntN(len(ids))]
	return id, at[id]
}

// restore runs a file restore (the files become its tree) and writes
// what the core records of it.
func (s *simSession) restore(r messages.Restore) error {
	s.res.Restores++
	s.files = r.Tree
	if rd := s.stepCore(session.RestoreDone{Tree: r.Tree}); len(rd.Append) > 0 {
		return s.write(rd.Append...)
	}
	return fmt.Errorf("a restore owed (%s) recorded nothing", r.Tree)
}

// finishRestore is an activation's: a file restore a crash interrupted
// is run again, and then none is owed.
func (s *simSession) finishRestore() error {
	o := s.owner
	if n := s.stepCore(session.FinishRestore{}).Revert; n != nil && n.Restore != nil {
		if err := s.restore(*n.Restore); err != nil {
			return err
		}
	}
	if r := o.core.State.Reverts.Restore; r != nil {
		return fmt.Errorf("activation left a restore owed (%s)", r.Tree)
	}
	return nil
}

// ledger keeps the journal's facts for the invariants, refusing the
// events that break one as they are written.
func (s *simSession) ledger(o *owner, ev messages.Event) error {
	switch e := ev.(type) {
	case messages.PromptPromoted:
		s.res.Promotions++
		for _, id := range e.MessageIDs {
			if _, ok := s.delivery[id]; !ok {
				return fmt.Errorf("promoted %s, which was never admitted", id)
			}
			s.promoted[id]++
			if s.promoted[id] > 1 {
				return fmt.Errorf("prompt %s promoted twice", id)
			}
		}
	case messages.TurnEnded, messages.Idle, messages.Interrupted:
		s.compactions = 0
	case messages.Moved:
		// A move ends the drain: the destination's drain (the one a
		// continuation owed starts, with no Idle between) compacts at
		// most once of its own, like the next owner's after a crash.
		s.compactions = 0
	case messages.TurnFailed:
		if e.ErrorKind != string(session.Overflow) {
			s.compactions = 0 // an overflow's retry is the same logical turn
		}
	case messages.CompactionStarted:
		// Compaction never loops: at most one per logical turn (which a
		// turn's end or the drain's end closes; the promotion that opens
		// the next is written after a compaction before its turn).
		s.compactions++
		if s.compactions > 1 {
			return fmt.Errorf("compaction %s is the second of one logical turn", e.CompactionID)
		}
	case messages.ToolCalled:
		k := toolKey{e.AssistantMessageID, e.CallID}
		s.called[k]++
		if s.called[k] > 1 {
			return fmt.Errorf("tool call %s of %s started twice", e.CallID, e.AssistantMessageID)
		}
	case messages.SessionRenamed:
		if e.Title == "generated" && s.clientTitled {
			return fmt.Errorf("a generated title was written after the client's")
		}
		s.clientTitled = s.clientTitled || e.Title != "generated"
	case messages.QuestionAsked:
		s.res.Questions++
		s.questions[e.RequestID] = toolKey{e.AssistantMessageID, e.CallID}
	case messages.QuestionReplied:
		return s.closedOnce(e.RequestID)
	case messages.QuestionRejected:
		return s.closedOnce(e.RequestID)
	case messages.ToolSucceeded:
		return s.settledOnce(toolKey{e.AssistantMessageID, e.CallID})
	case messages.ToolFailed:
		return s.settledOnce(toolKey{e.AssistantMessageID, e.CallID})
	}
	return nil
}

// closedOnce: a question request is answered or dismissed at most once,
// and only one that was asked.
func (s *simSession) closedOnce(id string) error {
	if _, ok := s.questions[id]; !ok {
		return fmt.Errorf("question request %s closed but never asked", id)
	}
	s.closed[id]++
	if s.closed[id] > 1 {
		return fmt.Errorf("question request %s answered twice", id)
	}
	return nil
}

func (s *simSession) settledOnce(k toolKey) error {
	s.settled[k]++
	if s.called[k] == 0 {
		return fmt.Errorf("tool call %s of %s settled but never started", k.call, k.turn)
	}
	if s.settled[k] > 1 {
		return fmt.Errorf("tool call %s of %s settled twice", k.call, k.turn)
	}
	return nil
}

// check holds the invariants after every step. The live state is compared
// with the journal's projection after every step (the row, the inbox, the
// epoch, the history's length and newest message) and in full, with a
// replay from seq 1, at every crash (activate) and every end of a drain.
func (s *simSession) check() error {
	o := s.owner
	if s.j.err != nil {
		return s.j.err
	}
	if s.readyErr != nil {
		return s.readyErr
	}
	if evs := o.core.Flush(); len(evs) > 0 {
		// Every step leaves what is carried waiting for an Append the
		// core decides: the owner's Flush is a safety net.
		return fmt.Errorf("a step left %d carried events that must be written before the next input (Flush): %v", len(evs), evs)
	}
	live, proj := &o.core.State, &s.j.replica
	if live.Row != proj.Row || !samePending(live.Pending, proj.Pending) || !reflect.DeepEqual(live.Epoch, proj.Epoch) || len(live.Questions) != len(proj.Questions) ||
		len(live.History.Msgs) != len(proj.History.Msgs) ||
		(len(live.History.Msgs) > 0 && !reflect.DeepEqual(live.History.Msgs[len(live.History.Msgs)-1], proj.History.Msgs[len(proj.History.Msgs)-1])) {
		return fmt.Errorf("the live state differs from the journal's projection:\nlive       %+v\nprojection %+v", live.Row, proj.Row)
	}
	if o.core.Drain == nil && s.fullCheckDue {
		s.fullCheckDue = false
		return s.fullCheck()
	}
	return nil
}

// fullCheck replays the journal from seq 1 and compares everything, and
// checks the prompt and tool ledgers.
func (s *simSession) fullCheck() error {
	o := s.owner
	st := session.NewState(s.id)
	for i, ev := range s.j.events {
		if err := st.Apply(int64(i+1), ev); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	live := o.core.State
	if live.Row != st.Row || !samePending(live.Pending, st.Pending) || !reflect.DeepEqual(live.Epoch, st.Epoch) || !sameHistory(live.History.Msgs, st.History.Msgs) ||
		len(live.Questions) != len(st.Questions) || (len(st.Questions) > 0 && !reflect.DeepEqual(live.Questions, st.Questions)) {
		return fmt.Errorf("live state differs from a replay:\nlive   %+v\nreplay %+v", live.Row, st.Row)
	}
	if !reflect.DeepEqual(live.Reverts, st.Reverts) {
		return fmt.Errorf("live reverts differ from a replay:\nlive   %+v\nreplay %+v", live.Reverts, st.Reverts)
	}
	if !maps.Equal(live.Calls, st.Calls) || !maps.Equal(live.Asks, st.Asks) || !slices.Equal(live.Turns, st.Turns) {
		return fmt.Errorf("live open work differs from a replay:\nlive   %v %v %v\nreplay %v %v %v", live.Calls, live.Asks, live.Turns, st.Calls, st.Asks, st.Turns)
	}
	// No admitted prompt lost: each is pending or promoted exactly once.
	pending := map[string]bool{}
	for _, p := range st.Pending {
		pending[p.MessageID] = true
	}
	for id := range s.delivery {
		if s.promoted[id] == 0 && !pending[id] {
			return fmt.Errorf("prompt %s lost: neither pending nor promoted", id)
		}
		if s.promoted[id] > 0 && pending[id] {
			return fmt.Errorf("prompt %s both promoted and pending", id)
		}
	}
	// Every started tool settles exactly once, by the end of its drain (a
	// question's call once it is answered or dismissed).
	for k, n := range s.called {
		if s.settled[k] != n && !(n == 1 && s.settled[k] == 0 && st.QuestionCall(k.turn, k.call)) {
			return fmt.Errorf("tool call %s of %s started %d times, settled %d times, with no drain running", k.call, k.turn, n, s.settled[k])
		}
	}
	return nil
}

func samePending(a, b []session.InboxEntry) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func sameHistory(a, b []messages.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// simWindow is the simulated model's context window.
const simWindow = 100000

// simCompaction is the owners' compaction configuration: a recent context
// of one token, so that any history with a finished turn has something to
// compact.
func simCompaction(auto bool) compaction.Config {
	return compaction.Config{Auto: auto, Keep: 1}
}
