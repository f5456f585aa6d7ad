package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	contribruntime "go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// ScopeName is the instrumentation scope of sessionrt's own instruments.
const ScopeName = "github.com/sessionrt/sessionrt"

// ErrUnsupportedProtocol is returned by Open when the OTEL_* variables ask
// for an OTLP metrics transport this build does not have (gRPC).
var ErrUnsupportedProtocol = errors.New("unsupported OTLP protocol")

// Config configures Open. The zero value serves /metrics only.
type Config struct {
	// Resource describes this process (service.name, host, ...): it becomes
	// Prometheus's target_info and every OTLP batch's resource.
	Resource *resource.Resource
	// Getenv reads the environment for the decision whether to export OTLP
	// (default os.Getenv). The OTLP exporter itself reads the process
	// environment for endpoint, headers, timeout, TLS and compression, and
	// the periodic reader OTEL_METRIC_EXPORT_INTERVAL and _TIMEOUT.
	Getenv func(string) string
	// Readers are further readers on the same instruments (tests, or a
	// deployment's own exporter).
	Readers []sdkmetric.Reader
}

// Registry is the one OpenTelemetry MeterProvider sessionrt records into,
// with its two outputs: Prometheus's exposition at Handler (with the Go
// runtime and process collectors operators search for, go_* and process_*)
// and, when the environment names an endpoint, OTLP/HTTP (with the Go
// runtime metrics of OpenTelemetry's semantic conventions, go.*).
//
// Nothing in it is global: no otel.SetMeterProvider, no default registry.
type Registry struct {
	provider *sdkmetric.MeterProvider
	meter    metric.Meter
	prom     *prometheus.Registry
	// runtime is a MeterProvider of its own for the OTLP-only Go runtime
	// instruments, so /metrics does not show the runtime twice under two
	// naming schemes. Nil without OTLP.
	runtime *sdkmetric.MeterProvider
	otlp    bool
}

// NewRegistry is Open with the zero Config: /metrics only. It cannot fail.
func NewRegistry() *Registry {
	r, err := Open(context.Background(), Config{Getenv: func(string) string { return "" }})
	if err != nil {
		panic("metrics: a registry without OTLP failed to build: " + err.Error())
	}
	return r
}

// Open builds the MeterProvider, the Prometheus exposition and, when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set
// and OTEL_METRICS_EXPORTER is not "none", the OTLP/HTTP metrics exporter.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	r := &Registry{prom: prometheus.NewRegistry()}
	if err := r.prom.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("metrics: go collector: %w", err)
	}
	if err := r.prom.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("metrics: process collector: %w", err)
	}
	// Scope labels (otel_scope_name) would be on every series: sessionrt's
	// instruments are one scope, and the names already say where they are from.
	exp, err := otelprom.New(otelprom.WithRegisterer(r.prom), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(exp)}
	if cfg.Resource != nil {
		opts = append(opts, sdkmetric.WithResource(cfg.Resource))
	}
	for _, rd := range cfg.Readers {
		opts = append(opts, sdkmetric.WithReader(rd))
	}
	on, err := otlpWanted(getenv)
	if err != nil {
		return nil, err
	}
	if on {
		main, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("metrics: OTLP/HTTP exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(main)))
		rt, err := otlpmetrichttp.New(ctx)
		if err != nil {
			_ = main.Shutdown(ctx)
			return nil, fmt.Errorf("metrics: OTLP/HTTP exporter: %w", err)
		}
		ropts := []sdkmetric.Option{sdkmetric.WithReader(sdkmetric.NewPeriodicReader(rt))}
		if cfg.Resource != nil {
			ropts = append(ropts, sdkmetric.WithResource(cfg.Resource))
		}
		r.runtime = sdkmetric.NewMeterProvider(ropts...)
		if err := contribruntime.Start(contribruntime.WithMeterProvider(r.runtime)); err != nil {
			_ = main.Shutdown(ctx)
			_ = r.runtime.Shutdown(ctx)
			return nil, fmt.Errorf("metrics: go runtime instruments: %w", err)
		}
		r.otlp = true
	}
	r.provider = sdkmetric.NewMeterProvider(opts...)
	r.meter = r.provider.Meter(ScopeName)
	return r, nil
}

// Meter is the meter sessionrt's instruments are created on.
func (r *Registry) Meter() metric.Meter { return r.meter }

// MeterProvider is the provider behind Meter, for libraries that take one.
func (r *Registry) MeterProvider() metric.MeterProvider { return r.provider }

// OTLP reports whether metrics are exported over OTLP/HTTP.
func (r *Registry) OTLP() bool { return r.otlp }

// Gatherer is the Prometheus side, for tests and embedding.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.prom }

// Handler serves the Prometheus exposition: the text format, or OpenMetrics
// (with exemplars linking histogram buckets to traces) when the scraper
// asks for it.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.prom, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// WriteText writes the Prometheus text exposition (format 0.0.4) to w.
func (r *Registry) WriteText(w io.Writer) error {
	mfs, err := r.prom.Gather()
	if err != nil {
		return fmt.Errorf("metrics: gather: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("metrics: encode %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// ForceFlush exports what the OTLP readers hold now.
func (r *Registry) ForceFlush(ctx context.Context) error {
	err := r.provider.ForceFlush(ctx)
	if r.runtime != nil {
		err = errors.Join(err, r.runtime.ForceFlush(ctx))
	}
	if err != nil {
		return fmt.Errorf("metrics flush: %w", err)
	}
	return nil
}

// Shutdown exports the last values over OTLP and stops the readers.
func (r *Registry) Shutdown(ctx context.Context) error {
	err := r.provider.Shutdown(ctx)
	if r.runtime != nil {
		err = errors.Join(err, r.runtime.Shutdown(ctx))
	}
	if err != nil {
		return fmt.Errorf("metrics shutdown: %w", err)
	}
	return nil
}

func otlpWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")), "none") {
		return false, nil
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") == "" {
		return false, nil
	}
	proto, name := getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
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
