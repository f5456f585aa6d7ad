package effect

import "github.com/asynkron/protoactor-go/actor"

// Located is a drain's Location resolved (Context, Tools: its registries;
// Err: they could not be reached) with the session's agent as the
// configuration gives it there (ConfigErr: it does not). Take keeps the
// registries and the agent, and makes it the core's LocationResolved.
type Located struct {
	Token          uint64
	Context, Tools *actor.PID
	Err            error
	Agent          Agent
	ConfigErr      error
}

// Locate resolves the drain's Location (resolve: its context and tool
// registries, started when needed) and reads the session's agent there
// (Config), on its own goroutine, and posts Located: the first step of
// every drain.
func (x *Drain) Locate(resolve func() (context, tools *actor.PID, err error), agent string) {
	token, config := x.Token, x.Config
	x.busy = true
	Go(x.Post, func() any {
		m := &Located{Token: token}
		m.Context, m.Tools, m.Err = resolve()
		m.Agent, m.ConfigErr = config(agent)
		return m
	}, func(err error) any { return &Located{Token: token, Err: err} })
}
