package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/anthropic"
	"github.com/sessionrt/sessionrt/provider/openai"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// OpenConfig configures Open. Zero fields take the documented defaults.
type OpenConfig struct {
	// Catalog defaults to the file named by SESSIONRT_CATALOG merged over
	// Builtin(), or Builtin() alone.
	Catalog *Catalog
	// Getenv defaults to os.Getenv (tests inject a map).
	Getenv func(string) string
	// HTTPClient is shared by the HTTP adapters; default: each adapter's own.
	HTTPClient *http.Client
	// Retry configures the retry wrapper around every provider.
	Retry provider.RetryConfig
	// NoRetry disables the retry wrapper (the caller retries itself).
	NoRetry bool
	// Metrics, when set, records every turn as a GenAI client operation:
	// gen_ai.client.operation.duration, time to first chunk and
	// gen_ai.client.token.usage by provider and model.
	Metrics *metrics.Runtime
	// Logger, when set, gets a line for every failed turn and every retried
	// attempt: the error's class, the provider's own message, its status,
	// type and code (operators see why a session stopped without reading
	// the journal).
	Logger *slog.Logger
}

// Registry is the configured provider set. It is itself a provider.Provider:
// Stream resolves the request's model in the catalog, fills in the model's
// defaults (Apply), and routes it to the provider's adapter with retries.
type Registry struct {
	catalog    *Catalog
	mux        *provider.Mux
	retrying   provider.Provider
	defaultRef provider.ModelRef
	log        *slog.Logger
	metrics    *metrics.Runtime
}

// Open builds the providers the environment configures. Variables read:
// OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (and
// whatever api_key_env / base_url_env a catalog file names), SESSIONRT_MODEL,
// SESSIONRT_CATALOG. Configured are:
//   - a provider whose APIKeyEnv variable is set (OPENAI_API_KEY,
//     ANTHROPIC_API_KEY for the built-ins), or whose BaseURLEnv variable is
//     set (OPENAI_BASE_URL alone configures a local server without a key),
//     or, for catalog-file providers, that has a base URL and no APIKeyEnv;
//   - scripted providers always (the demo, or the provider's script file).
//
// The default model is SESSIONRT_MODEL ("provider/model") when set, else the
// catalog's default, else the first configured of anthropic/claude-sonnet-4-5
// and openai/gpt-4.1, else scripted/demo — so sessionrt always starts.
// When OPENAI_BASE_URL names another server than api.openai.com, the openai
// provider allows unlisted models (a local server serves what was pulled),
// unless a configuration's whitelist limits it to the whitelisted ones.
func Open(cfg OpenConfig) (*Registry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := cfg.Catalog
	if c == nil {
		c = Builtin()
		if path := getenv("SESSIONRT_CATALOG"); path != "" {
			loaded, err := Load(path)
			if err != nil {
				return nil, fmt.Errorf("SESSIONRT_CATALOG: %w", err)
			}
			c = loaded
		}
	}
	// Work on a copy: Open adjusts providers from the environment.
	cc := &Catalog{Providers: make(map[string]Provider, len(c.Providers)), Default: c.Default}
	for id, p := range c.Providers {
		cc.Providers[id] = p
	}
	providers := map[string]provider.Provider{}
	for _, id := range cc.ProviderIDs() {
		p := cc.Providers[id]
		key := ""
		if p.APIKeyEnv != "" {
			key = getenv(p.APIKeyEnv)
		}
		if key == "" {
			key = p.APIKey
		}
		baseFromEnv := ""
		if p.BaseURLEnv != "" {
			baseFromEnv = getenv(p.BaseURLEnv)
		}
		if baseFromEnv != "" {
			p.BaseURL = baseFromEnv
			if p.Kind == KindOpenAI && !strings.Contains(baseFromEnv, "api.openai.com") {
				p.AllowUnlisted, p.Models = servesUnlisted(p)
			}
		}
		configured := false
		switch p.Kind {
		case KindScripted:
			configured = true
		case KindOpenAI:
			configured = key != "" || baseFromEnv != "" || (p.APIKeyEnv == "" && p.BaseURL != "")
		case KindAnthropic:
			configured = key != "" || (p.APIKeyEnv == "" && p.BaseURL != "")

		}
		if !configured {
			continue
		}
		ad, err := build(id, p, key, cfg.HTTPClient)
		if err != nil {
			return nil, err
		}
		cc.Providers[id] = p
		providers[id] = ad
	}
	r := &Registry{catalog: cc, mux: provider.NewMux(providers), log: cfg.Logger, metrics: cfg.Metrics}
	r.retrying = r.mux
	if !cfg.NoRetry {
		rc := cfg.Retry
		if r.log != nil {
			onRetry := rc.OnRetry
			rc.OnRetry = func(attempt int, delay time.Duration, err error) {
				r.log.LogAttrs(context.Background(), slog.LevelInfo, "provider attempt failed, retrying",
					append(failureAttrs(err), slog.Int("attempt", attempt), slog.Duration("delay", delay))...)
				if onRetry != nil {
					onRetry(attempt, delay, err)
				}
			}
		}
		r.retrying = provider.Retry(r.mux, rc)
	}
	def, err := r.pickDefault(getenv("SESSIONRT_MODEL"))
	if err != nil {
		return nil, err
	}
	r.defaultRef = def
	return r, nil
}

func build(id string, p Provider, key string, hc *http.Client) (provider.Provider, error) {
	idle, err := p.idleTimeout()
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", id, err)
	}
	switch p.Kind {
	case KindOpenAI:
		mid := openai.MidSystemAuto
		switch p.MidSystem {
		case "native":
			mid = openai.MidSystemNative
		case "wrapped":
			mid = openai.MidSystemWrapped
		}
		a, err := openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc, MidSystem: mid, MaxTokensField: p.MaxTokensField, IdleTimeout: idle})
		if err != nil {
			return nil, fmt.Errorf("provider %q: %w", id, err)
		}
		return a, nil
	case KindAnthropic:
		a, err := anthropic.New(anthropic.Config{BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc, IdleTimeout: idle})
		if err != nil {
			return nil, fmt.Errorf("provider %q: %w", id, err)
		}
		return a, nil
	case KindScripted:
		if p.Script == "" {
			return scripted.Demo(), nil
		}
		sc, err := scripted.Load(p.Script)
		if err != nil {
			return nil, fmt.Errorf("provider %q: %w", id, err)
		}
		return scripted.New(scripted.Config{Script: sc})
	}
	return nil, fmt.Errorf("provider %q: unknown kind %q", id, p.Kind)
}

func (r *Registry) pickDefault(env string) (provider.ModelRef, error) {
	if env != "" {
		prov, model, ok := strings.Cut(env, "/")
		if !ok || prov == "" || model == "" {
			return provider.ModelRef{}, fmt.Errorf("SESSIONRT_MODEL %q: want provider/model", env)
		}
		ref := provider.ModelRef{Provider: prov, Model: model}
		if err := r.check(ref); err != nil {
			return provider.ModelRef{}, fmt.Errorf("SESSIONRT_MODEL: %w", err)
		}
		return ref, nil
	}
	if d := r.catalog.Default; d != nil && r.check(*d) == nil {
		return *d, nil
	}
	for _, ref := range []provider.ModelRef{{Provider: "anthropic", Model: "claude-sonnet-4-5"}, {Provider: "openai", Model: "gpt-4.1"}} {
		if r.check(ref) == nil {
			return ref, nil
		}
	}
	return provider.ModelRef{Provider: "scripted", Model: scripted.DemoModel}, nil
}

// check says whether ref names a configured provider and a known model.
func (r *Registry) check(ref provider.ModelRef) error {
	if _, ok := r.mux.Lookup(ref.Provider); !ok {
		return fmt.Errorf("provider %q is not configured (configured: %s)", ref.Provider, strings.Join(r.mux.IDs(), ", "))
	}
	_, err := r.catalog.Resolve(ref)
	return err
}

// For returns the registry as the provider for ref after checking that ref
// names a configured provider and a known model — the shape of the Session
// runtime's Providers hook, failing at turn start with a clear error.
func (r *Registry) For(ref provider.ModelRef) (provider.Provider, error) {
	if err := r.check(ref); err != nil {
		return nil, err
	}
	return r, nil
}

// CheckVariant says whether ref's model has the variant name (none is
// always fine), naming the variants it has when not.
func (r *Registry) CheckVariant(ref provider.ModelRef, name string) error {
	if name == "" {
		return nil
	}
	_, _, _, err := r.catalog.Variant(ref, name)
	return err
}

// Default is the model to use when a session names none.
func (r *Registry) Default() provider.ModelRef { return r.defaultRef }

// Configured lists the configured provider IDs.
func (r *Registry) Configured() []string { return r.mux.IDs() }

// Catalog is the catalog as configured (base URLs from the environment applied).
func (r *Registry) Catalog() *Catalog { return r.catalog }

// Model returns the description of a configured model (context window,
// output limit, capabilities) — what the Session needs for compaction.
func (r *Registry) Model(ref provider.ModelRef) (Model, error) {
	if err := r.check(ref); err != nil {
		return Model{}, err
	}
	return r.catalog.Resolve(ref)
}

// Stream resolves req's model, applies its catalog defaults and streams the
// turn through the provider's adapter (with retries unless NoRetry). An
// empty req.Model uses Default().
func (r *Registry) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	if req.Model == (provider.ModelRef{}) {
		cp := *req
		cp.Model = r.defaultRef
		req = &cp
	}
	m, err := r.Model(req.Model)
	if err != nil {
		err := &provider.Error{Kind: provider.KindInvalidRequest, Message: "model " + req.Model.String(), Err: err}
		r.logFailure(req.Model, err)
		return nil, err
	}
	if req.Variant != "" {
		c, o, w, err := r.catalog.Variant(req.Model, req.Variant)
		if err != nil {
			err := &provider.Error{Kind: provider.KindInvalidRequest, Message: err.Error()}
			r.logFailure(req.Model, err)
			return nil, err
		}
		req = ApplyVariant(req, c, o, w)
	}
	start := time.Now()
	out := Apply(m, req)
	if m.APIID != "" {
		out.Model.Model = m.APIID // an alias: the provider knows the model by its own ID
	}
	s, err := r.retrying.Stream(ctx, out)
	if err != nil {
		r.logFailure(req.Model, err)
		if r.metrics != nil {
			r.metrics.GenAIOperation(ctx, metrics.Operation{Provider: req.Model.Provider, Model: req.Model.Model,
				Duration: time.Since(start), InputTokens: -1, OutputTokens: -1, ErrorType: provider.KindOf(err).String()})
		}
		return nil, err
	}
	if r.log == nil && r.metrics == nil {
		return s, nil
	}
	return &loggedStream{Stream: s, r: r, model: req.Model, ctx: ctx, start: start}, nil
}

// loggedStream logs the error that ends its turn and records the turn in
// the metrics once it ends (finished, failed, or closed before its end:
// interrupted).
type loggedStream struct {
	provider.Stream
	r      *Registry
	model  provider.ModelRef
	logged bool

	ctx   context.Context // the turn's (its chat span: the exemplar)
	start time.Time
	// mu guards what record reads: Close may run on another goroutine to
	// abort a blocked Next.
	mu         sync.Mutex
	firstChunk time.Duration
	usage      *provider.Usage
	recorded   bool
}

func (s *loggedStream) Next() (provider.Part, error) {
	p, err := s.Stream.Next()
	if err == nil && s.r.metrics != nil {
		s.mu.Lock()
		if s.firstChunk == 0 {
			s.firstChunk = time.Since(s.start)
		}
		if p.Kind == provider.PartUsage {
			u := p.Usage
			s.usage = &u
		}
		s.mu.Unlock()
	}
	if err != nil && err != io.EOF && !s.logged {
		s.logged = true
		s.r.logFailure(s.model, err)
	}
	if err != nil {
		kind := ""
		if err != io.EOF {
			kind = provider.KindOf(err).String()
		}
		s.record(kind)
	} else if p.Kind == provider.PartFinish {
		// The turn is over: a reader stops here (the drain's pump does,
		// without reading on to io.EOF), and its Close must not count
		// the finished turn as interrupted.
		s.record("")
	}
	return p, err
}

func (s *loggedStream) Close() error {
	s.record(provider.KindInterrupted.String()) // no-op after the turn's end
	return s.Stream.Close()
}

func (s *loggedStream) record(errorType string) {
	if s.r.metrics == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recorded {
		return
	}
	s.recorded = true
	op := metrics.Operation{Provider: s.model.Provider, Model: s.model.Model, Duration: time.Since(s.start),
		FirstChunk: s.firstChunk, InputTokens: -1, OutputTokens: -1, ErrorType: errorType}
	if s.usage != nil {
		op.InputTokens, op.OutputTokens = int64(s.usage.InputTokens), int64(s.usage.OutputTokens)
	}
	s.r.metrics.GenAIOperation(s.ctx, op)
}

// logFailure logs a turn's terminal error: a warning, or a note when the
// caller interrupted the turn.
func (r *Registry) logFailure(ref provider.ModelRef, err error) {
	if r.log == nil {
		return
	}
	level := slog.LevelWarn
	if provider.KindOf(err) == provider.KindInterrupted {
		level = slog.LevelInfo
	}
	attrs := append([]slog.Attr{slog.String("provider", ref.Provider), slog.String("model", ref.Model)}, failureAttrs(err)...)
	r.log.LogAttrs(context.Background(), level, "provider turn failed", attrs...)
}

// failureAttrs describes err: its class and the provider's own words.
func failureAttrs(err error) []slog.Attr {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return []slog.Attr{slog.String("class", provider.KindUnknown.String()), slog.String("error", err.Error())}
	}
	attrs := []slog.Attr{slog.String("class", pe.Kind.String()), slog.String("message", pe.Message)}
	if pe.Status != 0 {
		attrs = append(attrs, slog.Int("status", pe.Status))
	}
	if pe.Type != "" {
		attrs = append(attrs, slog.String("type", pe.Type))
	}
	if pe.Code != "" {
		attrs = append(attrs, slog.String("code", pe.Code))
	}
	if pe.RetryAfter > 0 {
		attrs = append(attrs, slog.Duration("retry_after", pe.RetryAfter))
	}
	if pe.Err != nil {
		attrs = append(attrs, slog.String("cause", pe.Err.Error()))
	}
	return attrs
}

// servesUnlisted is what a provider on a local server serves: any model,
// or, under a whitelist, the whitelisted ones it does not list as well.
func servesUnlisted(p Provider) (bool, map[string]Model) {
	if len(p.Whitelist) == 0 {
		return true, p.Models
	}
	models := make(map[string]Model, len(p.Models)+len(p.Whitelist))
	for id, m := range p.Models {
		models[id] = m
	}
	for _, id := range p.Whitelist {
		if _, ok := models[id]; !ok && !slices.Contains(p.Blocked, id) {
			models[id] = Unlisted()
		}
	}
	return false, models
}
