package driver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// Setup is what a Target gets for one run.
type Setup struct {
	// Dir is a fresh directory for the server's state (data, HOME, logs).
	Dir string
	// Project is the working directory sessions are created in.
	Project string
	// Addr is the free loopback host:port to serve on.
	Addr string
	// LLMURL is the fake model server's OpenAI base URL (ends in /v1).
	LLMURL string
	// PprofAddr, when set, is a free loopback address a Profiled target
	// serves net/http/pprof on.
	PprofAddr string
}

// Profiled is a Target that can serve net/http/pprof (Setup.PprofAddr).
type Profiled interface {
	ServesPprof() bool
}

// PprofEnv is the variable that makes `sessionrt serve` serve pprof
// (cli.PprofEnv; the driver cannot import cli).
const PprofEnv = "SESSIONRT_PPROF_ADDR"

// Target is a system under test: how to start its server.
type Target interface {
	Name() string
	Command(ctx context.Context, s Setup) (*exec.Cmd, error)
}

// ModelRef names a model the V2 way (OpenCode's ModelRef).
type ModelRef struct {
	ProviderID string `json:"providerID"`
	ID         string `json:"id"`
}

// SessionModeler is a Target whose sessions must name their model when
// created (POST /api/session {"model": …}) instead of relying on the
// server's configured default.
type SessionModeler interface {
	SessionModel() ModelRef
}

// Sessionrt runs `sessionrt serve` with the fake server as its OpenAI
// provider.
type Sessionrt struct {
	// Binary is the sessionrt executable; default the running one.
	Binary string
	// Label names the system in the report (default "sessionrt"): a
	// baseline binary run beside this one is told apart by it.
	Label string
}

func (t Sessionrt) Name() string {
	if t.Label != "" {
		return t.Label
	}
	return "sessionrt"
}

func (Sessionrt) ServesPprof() bool { return true }

func (t Sessionrt) Command(ctx context.Context, s Setup) (*exec.Cmd, error) {
	bin := t.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sessionrt binary: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, bin, "--data", s.Dir+"/data", "serve", "--insecure", "--listen", s.Addr)
	cmd.Dir = s.Project
	cmd.Env = append(os.Environ(),
		"OPENAI_BASE_URL="+s.LLMURL,
		"OPENAI_API_KEY=bench",
		"SESSIONRT_MODEL=openai/bench",
		"ANTHROPIC_API_KEY=", // only the fake model is configured
	)
	if s.PprofAddr != "" {
		cmd.Env = append(cmd.Env, PprofEnv+"="+s.PprofAddr)
	}
	return cmd, nil
}
