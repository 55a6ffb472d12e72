package bench

import "sync"

// waiters hands the one message that ends a run (its finished event) to
// the goroutine waiting for that run, by run id: the runs of skillbus and
// those of the durable floor are each followed through one subscription.
type waiters[T any] struct {
	mu sync.Mutex // mu guards m
	m  map[string]chan T
}

// add registers a waiter for id and returns its channel (buffered, so
// deliver never blocks) and the function that removes it.
func (w *waiters[T]) add(id string) (<-chan T, func()) {
	ch := make(chan T, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]chan T{}
	}
	w.m[id] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.m, id)
		w.mu.Unlock()
	}
}

// deliver hands v to id's waiter, if one is registered, and removes it.
func (w *waiters[T]) deliver(id string, v T) {
	w.mu.Lock()
	ch := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ch != nil {
		ch <- v
	}
}
