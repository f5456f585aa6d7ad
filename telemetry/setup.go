package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconvres "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sessionrt/sessionrt/telemetry/metrics"
	"github.com/sessionrt/sessionrt/telemetry/spanstore"
)

// DefaultServiceName is service.name unless Config or OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "sessionrt"

// ErrUnsupportedProtocol is returned by Setup when the OTEL_* variables ask
// for an OTLP transport this build does not have (gRPC), for spans or metrics.
var ErrUnsupportedProtocol = metrics.ErrUnsupportedProtocol

// Config configures Setup. The zero value is valid: tracing into nothing but
// the exporters the environment names, and metrics.
type Config struct {
	// ServiceName is service.name (default "sessionrt"). OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it, as the OpenTelemetry spec says.
	ServiceName string
	// ServiceVersion is service.version, when known.
	ServiceVersion string
	// DB, when not nil, gets the span store (see package spanstore), so that
	// `sessionrt trace show` needs no tracing backend.
	DB *sql.DB
	// Store configures the span store; its DB field is taken from DB above.
	Store spanstore.Config
	// Exporters are further span exporters, each behind its own
	// BatchSpanProcessor (tests, or a deployment's own choice).
	Exporters []sdktrace.SpanExporter
	// Sampler decides which traces are recorded (default: parent-based,
	// always on for new traces).
	Sampler sdktrace.Sampler
	// MetricReaders are further metric readers on the runtime's instruments
	// (tests, or a deployment's own exporter).
	MetricReaders []sdkmetric.Reader
	// Getenv reads the environment for the decision whether to export OTLP
	// (default os.Getenv). The OTLP exporter itself reads the process
	// environment for endpoint, headers, timeout, TLS and compression.
	Getenv func(string) string
}

// Telemetry is what Setup built. Nothing in it is global: the caller may
// install TracerProvider with otel.SetTracerProvider.
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	// Tracer starts the GenAI spans (invoke_agent, chat, execute_tool).
	Tracer *Tracer
	// Store is the span store, nil without Config.DB.
	Store *spanstore.Store
	// Registry holds the metrics (OpenTelemetry SDK); serve
	// Registry.Handler() at /metrics. It exports OTLP/HTTP too when the
	// OTEL_EXPORTER_OTLP_* variables name an endpoint.
	Registry *metrics.Registry
	// Metrics are the runtime's named metrics in Registry.
	Metrics *metrics.Runtime
	// OTLP reports whether spans are exported over OTLP/HTTP.
	OTLP bool
}

// Setup builds the tracer provider and metrics. OTLP/HTTP export of spans is
// on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set and OTEL_TRACES_EXPORTER is not "none"; of metrics likewise with
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT and OTEL_METRICS_EXPORTER; the exporter honours the other standard
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression, certificates,
// protocol http/protobuf or http/json). Batching honours OTEL_BSP_*.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	res, err := buildResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tel := &Telemetry{}
	if tel.Registry, err = metrics.Open(ctx, metrics.Config{Resource: res, Getenv: getenv, Readers: cfg.MetricReaders}); err != nil {
		return nil, fmt.Errorf("telemetry metrics: %w", err)
	}
	var exporters []sdktrace.SpanExporter
	// On failure, shut down what was already built; the store owns a goroutine.
	fail := func(err error) (*Telemetry, error) {
		for _, e := range exporters {
			_ = e.Shutdown(context.WithoutCancel(ctx))
		}
		_ = tel.Registry.Shutdown(context.WithoutCancel(ctx))
		return nil, err
	}
	if tel.Metrics, err = metrics.NewRuntime(tel.Registry); err != nil {
		return fail(fmt.Errorf("telemetry metrics: %w", err))
	}
	if cfg.DB != nil {
		sc := cfg.Store
		sc.DB = cfg.DB
		if tel.Store, err = spanstore.Open(ctx, sc); err != nil {
			return fail(fmt.Errorf("telemetry span store: %w", err))
		}
		exporters = append(exporters, tel.Store)
	}
	if on, err := otlpWanted(getenv); err != nil {
		return fail(err)
	} else if on {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return fail(fmt.Errorf("telemetry OTLP/HTTP exporter: %w", err))
		}
		exporters = append(exporters, exp)
		tel.OTLP = true
	}
	exporters = append(exporters, cfg.Exporters...)

	sampler := cfg.Sampler
	if sampler == nil {
		sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
		sdktrace.WithSpanProcessor(sessionInheritor{}),
	}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	tel.TracerProvider = sdktrace.NewTracerProvider(opts...)
	tel.Tracer = NewTracer(tel.TracerProvider)
	return tel, nil
}

// ForceFlush exports every finished span now (metrics keep their own
// export interval: Registry.ForceFlush).
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	if err := t.TracerProvider.ForceFlush(ctx); err != nil {
		return fmt.Errorf("telemetry flush: %w", err)
	}
	return nil
}

// Shutdown flushes finished spans and the last metrics to every exporter
// and stops them (the span store stops pruning; the database stays open for
// its owner to close).
func (t *Telemetry) Shutdown(ctx context.Context) error {
	err := t.TracerProvider.Shutdown(ctx)
	if err != nil {
		err = fmt.Errorf("telemetry shutdown: %w", err)
	}
	return errors.Join(err, t.Registry.Shutdown(ctx))
}

func otlpWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false, nil
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	proto, name := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if proto == "" {
		proto, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	switch proto {
	case "", "http/protobuf", "http/json":
		return true, nil
	}
	return false, fmt.Errorf("%w: %s=%q; sessionrt exports OTLP over HTTP: use http/protobuf or http/json",
		ErrUnsupportedProtocol, name, proto)
}

func buildResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []resource.Option{resource.WithAttributes(semconvres.ServiceName(name))}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconvres.ServiceVersion(cfg.ServiceVersion)))
	}
	// Later options win: the environment overrides the code's defaults.
	attrs = append(attrs, resource.WithSchemaURL(semconvres.SchemaURL), resource.WithTelemetrySDK(),
		resource.WithHost(), resource.WithFromEnv())
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		// Partial resources (an unparsable OTEL_RESOURCE_ATTRIBUTES entry) are
		// still usable; anything else is not.
		if res == nil || !errors.Is(err, resource.ErrPartialResource) {
			return nil, fmt.Errorf("telemetry resource: %w", err)
		}
	}
	return res, nil
}

// sessionInheritor copies gen_ai.conversation.id from an in-process parent
// span to a child that lacks it, so that every span under a drain (a
// library's HTTP span inside a chat turn, say) is stored with its session.
type sessionInheritor struct{}

func (sessionInheritor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	for _, kv := range s.Attributes() {
		if kv.Key == KeyConversationID {
			return
		}
	}
	p, ok := trace.SpanFromContext(parent).(sdktrace.ReadOnlySpan)
	if !ok {
		return
	}
	for _, kv := range p.Attributes() {
		if kv.Key == KeyConversationID {
			s.SetAttributes(kv)
			return
		}
	}
}

func (sessionInheritor) OnEnd(sdktrace.ReadOnlySpan)      {}
func (sessionInheritor) Shutdown(context.Context) error   { return nil }
func (sessionInheritor) ForceFlush(context.Context) error { return nil }
