package environment

import (
	"context"
	"time"

	"github.com/sessionrt/sessionrt/contextsources"
)

// DateKey is the date source key.
const DateKey = "core/date"

// DateConfig configures the date source.
type DateConfig struct {
	// Now reads the clock. Default: time.Now.
	Now func() time.Time
	// Location is the calendar's time zone. Default: time.Local (host-local date, as the
	// spec requires until a user time zone is configurable).
	Location *time.Location
}

// dateLayout is both the stored value and the comparison unit: the value changes once a
// day, so a session is told about a new date at most once per day.
const dateLayout = "2006-01-02"

// DateSource is the host-local calendar date Context Source.
func DateSource(cfg DateConfig) contextsources.Source {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	return contextsources.MustMake(contextsources.Spec[string]{
		Key: DateKey,
		Load: func(context.Context) contextsources.Result[string] {
			return contextsources.Present(cfg.Now().In(cfg.Location).Format(dateLayout))
		},
		Baseline: func(d string) string { return "Today's date: " + longDate(d) + "." },
		Update:   func(d string) string { return "The date is now " + longDate(d) + "." },
	})
}

// longDate adds the weekday, which models use when reasoning about "today".
func longDate(d string) string {
	t, err := time.Parse(dateLayout, d)
	if err != nil {
		return d
	}
	return t.Format("Monday, 2006-01-02")
}
