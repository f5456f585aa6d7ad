package effect

// Located is a drain's Location resolved (Loc: its registries; Err: they
// could not be reached) with the session's agent as the configuration
// gives it there (ConfigErr: it does not).
type Located[L, A any] struct {
	Token     uint64
	Loc       L
	Err       error
	Agent     A
	ConfigErr error
}

// Locate resolves a drain's Location (resolve: its registries, started
// when needed) and reads the session's agent there (config), on its own
// goroutine, and posts Located: the first step of every drain.
func Locate[L, A any](token uint64, resolve func() (L, error), config func() (A, error), post Post) {
	Go(post, func() any {
		loc, err := resolve()
		agent, cfgErr := config()
		return &Located[L, A]{Token: token, Loc: loc, Err: err, Agent: agent, ConfigErr: cfgErr}
	}, func(err error) any { return &Located[L, A]{Token: token, Err: err} })
}
