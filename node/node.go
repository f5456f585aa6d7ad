package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/config"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/environment"
	"github.com/sessionrt/sessionrt/contextsources/instructions"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/catalog"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// Config configures a node. Zero fields take the documented defaults.
type Config struct {
	// Data is the data directory (embedded journal, managed tool output).
	// Default "./.sessionrt".
	Data string
	// JournalURL selects MySQL/MariaDB ("mysql://user:pass@host:port/db");
	// empty means the embedded engine in Data.
	JournalURL string
	// Owner names this process in journal ownership records. Default host:pid.
	Owner string
	// Recovery is applied to sessions found mid-drain. Default resume.
	Recovery actors.Recovery
	// Providers overrides the providers built from the environment (tests,
	// benchmarks). DefaultModel then names the model sessions start with.
	Providers    func(messages.ModelRef) (provider.Provider, error)
	DefaultModel messages.ModelRef
	// Getenv reads provider configuration and the variables of OpenCode's
	// configuration files (HOME, XDG_CONFIG_HOME, OPENCODE_CONFIG, {env:…});
	// default os.Getenv.
	Getenv func(string) string
	// ConfigFile is read after every other configuration file of each
	// Location (serve --config).
	ConfigFile string
	// ProviderDir is the folder whose configuration (with the global one,
	// OPENCODE_CONFIG and ConfigFile) gives the providers and the default
	// model; default the working directory. Providers serve every Location.
	ProviderDir string
	// Agents overrides the agents every Location's configuration gives
	// (default: OpenCode's build and plan with its default permissions,
	// and the configured ones).
	Agents       map[string]actors.Agent
	DefaultAgent string
	// IdleAfter passivates idle sessions; default 1 minute.
	IdleAfter time.Duration
	// ToolOutputRetention keeps managed tool output files; default 7 days.
	ToolOutputRetention time.Duration
	// Logger receives operator diagnostics; default a text logger on stderr.
	Logger *slog.Logger
	// NoSpanStore leaves the span store out (benchmarks of the bare runtime).
	NoSpanStore bool
	// NoSnapshots takes no file snapshots of Locations (benchmarks of the
	// bare runtime); reverts then change the history only.
	NoSnapshots bool
	// Faults injects actor kills at named fault points (chaos runs only).
	Faults func(actors.FaultPoint, string) bool
	// Compaction configures automatic compaction (default: on, 20k buffer, 8k kept).
	Compaction *compaction.Config
	// ModelLimits overrides the catalog's context window and output limit.
	ModelLimits func(messages.ModelRef) (window, outputLimit int)
	// Titles names untitled sessions from their first prompt with the
	// Location's small_model (else its provider's small model, else the
	// session's model), as OpenCode does; sessionrt serve turns it on.
	// Off (tests, benchmarks): no provider request but the sessions' own.
	Titles bool
}

// Node is one running sessionrt process.
type Node struct {
	Config    Config
	Journal   *persistence.Journal
	Telemetry *telemetry.Telemetry
	System    *actor.ActorSystem
	Locations *supervisor.Locations
	Sessions  *actors.Sessions
	Bus       *actors.Bus
	Providers *catalog.Registry // nil when Config.Providers was given
	Output    *managed.Store
	// Snapshots keeps the Locations' file snapshots (data dir/snapshots);
	// nil with Config.NoSnapshots.
	Snapshots *filesnap.Store
	// Loader reads each Location's configuration files.
	Loader *config.Loader

	configured *configured // nil when Config.Agents was given

	cancel context.CancelFunc
}

// Start opens and wires everything. On error, whatever was started is stopped.
// JournalDir is where a node keeps its embedded journal inside the data directory. The
// admin commands (`sessionrt journal …`) find it through this function too, so that
// --data names the same directory for every command.
func JournalDir(data string) string { return filepath.Join(data, "journal") }

func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.Data == "" {
		cfg.Data = "./.sessionrt"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if cfg.ToolOutputRetention <= 0 {
		cfg.ToolOutputRetention = managed.DefaultRetention
	}
	data, err := filepath.Abs(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("data directory %q: %w", cfg.Data, err)
	}
	cfg.Data = data
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	bg, cancel := context.WithCancel(context.Background())
	n = &Node{Config: cfg, cancel: cancel, Bus: actors.NewBus()}
	defer func() {
		if err != nil {
			n.Stop(context.Background())
			n = nil
		}
	}()

	jcfg := persistence.Config{}
	if cfg.JournalURL == "" {
		// The embedded engine is locked to this one process: every commit
		// wakes its tailers directly, so the poll for other writers is only
		// a safety net (each open event stream pays for every poll).
		jcfg.PollInterval = 10 * time.Second
	}
	n.Journal, err = persistence.OpenURL(ctx, JournalDir(data), cfg.JournalURL, false, jcfg)
	if err != nil {
		return n, err
	}
	tcfg := telemetry.Config{}
	if !cfg.NoSpanStore {
		tcfg.DB = n.Journal.DB()
	}
	if n.Telemetry, err = telemetry.Setup(ctx, tcfg); err != nil {
		return n, fmt.Errorf("telemetry: %w", err)
	}
	if err := observeJournal(n.Telemetry.Metrics, n.Journal); err != nil {
		return n, fmt.Errorf("telemetry: journal metrics: %w", err)
	}
	if n.Output, err = managed.New(managed.Config{Dir: filepath.Join(data, "tool-output"), Retention: cfg.ToolOutputRetention, Logger: cfg.Logger}); err != nil {
		return n, fmt.Errorf("tool output store: %w", err)
	}
	go n.Output.Run(bg)
	if !cfg.NoSnapshots {
		if n.Snapshots, err = filesnap.Open(filesnap.Config{Dir: filepath.Join(data, "snapshots")}); err != nil {
			return n, fmt.Errorf("file snapshots: %w", err)
		}
		// The store is bounded: trees no Take returned for a week go, with
		// the blobs nothing names (a revert to one is refused by name).
		go n.Snapshots.Run(bg.Done(), time.Hour, filesnap.DefaultRetention, func(st filesnap.GCStats, err error) {
			switch {
			case err != nil:
				cfg.Logger.Warn("file snapshots: collection failed", "err", err)
			case st.Trees+st.Blobs > 0:
				cfg.Logger.Info("file snapshots: collected", "trees", st.Trees, "blobs", st.Blobs, "bytes", st.Bytes, "kept trees", st.KeptTrees)
			}
		})
	}
	n.Loader = config.NewLoader(config.Options{Getenv: cfg.Getenv, File: cfg.ConfigFile})
	var setup func(string) (actors.Setup, error)
	if cfg.Agents == nil {
		n.configured = newConfigured(n.Loader, n.Output.Dir())
		setup = n.configured.setup
	}

	providers, defaultModel := cfg.Providers, cfg.DefaultModel
	if providers == nil {
		base, err := n.baseCatalog()
		if err != nil {
			return n, fmt.Errorf("providers: %w", err)
		}
		pc, err := n.providerDirConfig()
		if err != nil {
			return n, fmt.Errorf("providers: %w", err)
		}
		open := func(info config.Info) (*catalog.Registry, error) {
			cat, err := providerCatalog(base, info, n.Loader.Getenv)
			if err != nil {
				return nil, err
			}
			return catalog.Open(catalog.OpenConfig{Catalog: cat, Getenv: cfg.Getenv, Logger: cfg.Logger, Metrics: n.Telemetry.Metrics})
		}
		reg, err := open(pc.Info)
		if err != nil {
			return n, fmt.Errorf("providers: %w", err)
		}
		n.Providers = reg
		if n.configured != nil {
			n.configured.registries = newRegistries(open, pc.Info, reg)
			// Config.ModelLimits overrides every Location's catalog.
			n.configured.limitsGiven = cfg.ModelLimits != nil
		}
		def := reg.Default()
		defaultModel = messages.ModelRef{Provider: def.Provider, ID: def.Model}
		models := registryModels(reg)
		providers = models.Providers
		if cfg.ModelLimits == nil {
			// The catalog's limits drive pre-emptive compaction; without
			// them the drain knew no window and only a provider's overflow
			// ever compacted.
			cfg.ModelLimits = models.Limits
		}
	}

	actorLog := cfg.Logger.With("lib", "protoactor")
	n.System = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return actorLog }))
	out, loader := n.Output, n.Loader
	approvals := journalApprovals{n.Journal}
	n.Locations, err = supervisor.New(n.System, supervisor.Config{Logger: cfg.Logger, Children: []supervisor.ChildSpec{
		supervisor.ContextRegistryChild(contextsources.RegistryConfig{}, BuiltinContext()),
		{Name: actors.ToolRegistryName, Props: func(dir string) *actor.Props {
			// Saved approvals belong to the project (its root), so every
			// Location of one repository shares them; references are read
			// from the Location's configuration when its registry starts.
			tc := toolactors.Config{Dir: dir, Project: config.ProjectRoot(dir), Output: out, Approvals: approvals, Logger: cfg.Logger}
			tc.Tools.Question = true
			tc.Tools.Skills = func(context.Context, string) ([]tools.SkillInfo, error) { return locationSkills(loader, dir) }
			if c, err := loader.Load(dir); err == nil {
				for _, r := range c.LocalReferences() {
					if tc.References == nil {
						tc.References = map[string]string{}
					}
					tc.References[r.Name] = r.Path
				}
			}
			p, err := toolactors.Props(tc)
			if err != nil {
				panic(err) // the Location's supervision reports it
			}
			return p
		}},
	}})
	if err != nil {
		return n, err
	}
	n.Sessions, err = actors.NewSessions(n.System, actors.Config{
		Journal:      n.Journal,
		Locations:    n.Locations,
		Providers:    providers,
		Owner:        cfg.Owner,
		Agents:       cfg.Agents,
		DefaultAgent: cfg.DefaultAgent,
		Setup:        setup,
		DefaultModel: defaultModel,
		IdleAfter:    cfg.IdleAfter,
		Recovery:     cfg.Recovery,
		Bus:          n.Bus,
		Logger:       cfg.Logger,
		Tracer:       n.Telemetry.Tracer,
		Faults:       cfg.Faults,
		Compaction:   cfg.Compaction,
		Metrics:      n.Telemetry.Metrics,
		ModelLimits:  cfg.ModelLimits,
		Snapshots:    n.Snapshots,
		Titles:       cfg.Titles,
	})
	return n, err
}

// BuiltinContext is every Location's built-in System Context: environment
// facts with the host-local date, and the AGENTS.md instructions.
func BuiltinContext() []supervisor.ContextContribution {
	return []supervisor.ContextContribution{
		{Key: "core/environment", Sources: environment.Context},
		{Key: "core/instructions", Sources: instructions.Context},
	}
}

// Stop stops sessions (drains are abandoned at once and recovered at the
// next start), Locations (running tools are killed), then flushes telemetry
// and closes the journal.
func (n *Node) Stop(ctx context.Context) error {
	var errs []error
	if n.Sessions != nil {
		n.Sessions.Stop()
	}
	if n.Locations != nil {
		n.Locations.Stop()
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.Telemetry != nil {
		if err := n.Telemetry.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: %w", err))
		}
	}
	if n.Journal != nil {
		if err := n.Journal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("journal: %w", err))
		}
	}
	return errors.Join(errs...)
}

// locationSkills is what the skill tool of the Location dir may load: the
// skills its configuration finds as the files are now.
func locationSkills(loader *config.Loader, dir string) ([]tools.SkillInfo, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	found, err := c.Skills(loader.Getenv)
	if err != nil {
		return nil, err
	}
	out := make([]tools.SkillInfo, len(found))
	for i, sk := range found {
		out[i] = tools.SkillInfo{Name: sk.Name, Description: sk.Description, Location: sk.Location, Content: sk.Content}
	}
	return out, nil
}

// baseCatalog is the provider catalog every Location's configuration
// adds to: the built-in one, or the SESSIONRT_CATALOG file.
func (n *Node) baseCatalog() (*catalog.Catalog, error) {
	if path := n.Loader.Getenv("SESSIONRT_CATALOG"); path != "" {
		loaded, err := catalog.Load(path)
		if err != nil {
			return nil, fmt.Errorf("SESSIONRT_CATALOG: %w", err)
		}
		return loaded, nil
	}
	return catalog.Builtin(), nil
}

// providerDirConfig is the configuration of Config.ProviderDir (default the
// working directory): its providers and default model are the node's
// defaults, used where no Location is known and by every Location whose
// configuration says the same. A malformed file there fails the start,
// naming file, line and column.
func (n *Node) providerDirConfig() (*config.Config, error) {
	dir := n.Config.ProviderDir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		dir = wd
	}
	return n.Loader.Load(dir)
}
