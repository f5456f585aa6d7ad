package protocol

// Inspection is what a live Session actor holds in memory, for diagnosing
// a session that does not progress (the journal shows what is durable;
// this shows what the actor waits for). It is read-only and local.
type Inspection struct {
	Seq       int64    // the stream's last seq as this activation knows it
	Ownership int64    // its journal ownership epoch
	Pending   int      // inbox entries not yet promoted
	Staged    []string // event types decided but not yet appended
	Perms     int      // permission asks waiting for a reply
	WakeAgain bool     // a wake arrived during the drain
	Drain     *DrainInspection
}

// DrainInspection is the active drain: what it waits for.
type DrainInspection struct {
	Token       uint64
	Busy        bool // an async step (location, observation, catalog) is outstanding
	Carry       bool // staged events wait for the next TurnStarted
	Interrupted bool
	Waiters     int // Run and WaitIdle callers
	Turn        *TurnInspection
}

// TurnInspection is the provider turn in flight.
type TurnInspection struct {
	AssistantID string
	Streaming   bool
	Unsettled   []string // call IDs whose settlement has not come back
	Settled     []string
}

// Inspect asks a live activation for its Inspection.
type Inspect struct{}

// Passive: an inspection is not activity (middleware.TrackIdle): it does
// not keep a session from passivating.
func (*Inspect) Passive() {}
