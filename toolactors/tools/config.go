package tools

import (
	"context"
	"time"
)

// Config configures the built-in tools. Zero fields take the documented defaults.
type Config struct {
	// Shell runs bash commands as `<Shell> -c <command>`; default /bin/sh.
	Shell string
	// BashDefaultTimeout applies when a call gives none; default 120 s.
	BashDefaultTimeout time.Duration
	// BashMaxTimeout caps a call's timeout; default 600 s.
	BashMaxTimeout time.Duration
	// BashKillGrace is the SIGTERM→SIGKILL delay; default 3 s.
	BashKillGrace time.Duration
	// BashOutputCap is the in-memory safety cap on captured output; default 8 MiB.
	BashOutputCap int
	// ReadPageLines is the default number of lines or entries per read page; default 2000.
	ReadPageLines int
	// ReadMaxLineBytes cuts longer lines in a read page; default 2000.
	ReadMaxLineBytes int
	// ReadMaxBinaryBytes is the largest binary file read returns as base64; default 1 MiB.
	ReadMaxBinaryBytes int
	// SearchLimit bounds glob and grep results; default 100.
	SearchLimit int
	// Skills lists the skills of the Location dir for the skill tool
	// (nil: none). It is asked at each call, so a skill added or changed
	// is found without a restart.
	Skills func(ctx context.Context, dir string) ([]SkillInfo, error)
	// Question offers the question tool (a Session answers it itself).
	Question bool
	// OnBashStart, if set, is called with each bash call's process-group leader PID
	// (diagnostics and tests).
	OnBashStart func(callID string, pid int)
}

func (c Config) withDefaults() Config {
	if c.Shell == "" {
		c.Shell = "/bin/sh"
	}
	if c.BashDefaultTimeout <= 0 {
		c.BashDefaultTimeout = 120 * time.Second
	}
	if c.BashMaxTimeout <= 0 {
		c.BashMaxTimeout = 600 * time.Second
	}
	if c.BashKillGrace <= 0 {
		c.BashKillGrace = 3 * time.Second
	}
	if c.BashOutputCap <= 0 {
		c.BashOutputCap = 8 << 20
	}
	if c.ReadPageLines <= 0 {
		c.ReadPageLines = 2000
	}
	if c.ReadMaxLineBytes <= 0 {
		c.ReadMaxLineBytes = 2000
	}
	if c.ReadMaxBinaryBytes <= 0 {
		c.ReadMaxBinaryBytes = 1 << 20
	}
	if c.SearchLimit <= 0 {
		c.SearchLimit = 100
	}
	return c
}
