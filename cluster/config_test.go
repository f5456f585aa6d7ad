package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

func TestStartRefusesBadConfigNamingTheProblem(t *testing.T) {
	echo := Kind{Name: "echo", Produce: func(string) actor.Actor { return nil }}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown provider", Config{Provider: "zk"}, `unknown provider "zk"`},
		{"automanaged without peers", Config{AutoManagePort: 6330, Kinds: []Kind{echo}}, "static Members list"},
		{"member without health port", Config{Members: []string{"127.0.0.1:6330"}, Kinds: []Kind{echo}}, "AutoManagePort"},
		{"peer without port", Config{AutoManagePort: 6330, Members: []string{"127.0.0.1"}, Kinds: []Kind{echo}}, `member "127.0.0.1"`},
		{"port out of range", Config{Port: 70000}, "port 70000"},
		{"kind without producer", Config{AutoManagePort: 6330, Members: []string{"127.0.0.1:6330"}, Kinds: []Kind{{Name: "x"}}}, `kind "x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Start(quietSystem(t), c.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrConfig naming %q", err, c.want)
			}
		})
	}
}

func TestSessionGrainNeedsTheFacade(t *testing.T) {
	if _, err := SessionGrain(SessionGrainConfig{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("err %v, want ErrConfig", err)
	}
}
