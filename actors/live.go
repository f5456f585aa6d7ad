package actors

import (
	"errors"
	"sync"
)

// ErrSlowSubscriber ends a subscription whose buffer filled up: the runtime
// never waits for a reader. The reader resumes from its durable cursor.
var ErrSlowSubscriber = errors.New("live subscriber too slow: buffer full, subscription cut; resume from the last durable seq")

// Bus fans live items out to subscribers without ever blocking a publisher.
type Bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscription receives live items until it is cut or closed.
type Subscription struct {
	bus     *Bus
	session string // "" receives every session
	ch      chan Live
	once    sync.Once
	err     error
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscribe returns a subscription to one session's items (or every
// session's when sessionID is empty) with a buffer of size items.
func (b *Bus) Subscribe(sessionID string, size int) *Subscription {
	if size <= 0 {
		size = 256
	}
	s := &Subscription{bus: b, session: sessionID, ch: make(chan Live, size)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// C delivers the items; it is closed when the subscription ends.
func (s *Subscription) C() <-chan Live { return s.ch }

// Err says why C was closed: nil after Close, ErrSlowSubscriber after a cut.
func (s *Subscription) Err() error {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.err
}

// Close ends the subscription.
func (s *Subscription) Close() { s.bus.end(s, nil) }

func (b *Bus) end(s *Subscription, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.once.Do(func() {
		s.err = err
		delete(b.subs, s)
		close(s.ch)
	})
}

// Publish delivers item to every matching subscriber that has room and cuts
// the ones that have none.
func (b *Bus) Publish(item Live) {
	b.mu.Lock()
	var slow []*Subscription
	for s := range b.subs {
		if s.session != "" && s.session != item.SessionID {
			continue
		}
		select {
		case s.ch <- item:
		default:
			slow = append(slow, s)
		}
	}
	b.mu.Unlock()
	for _, s := range slow {
		b.end(s, ErrSlowSubscriber)
	}
}
