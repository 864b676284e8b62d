package notify

// Running is how many Run loops of d take the rows this process enqueues.
func (d *Deliverer) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running
}
