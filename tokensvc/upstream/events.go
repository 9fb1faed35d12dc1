package upstream

// Events receives the outcomes of connect flows and refreshes, for metrics. Its methods must
// be fast and must not block.
type Events interface {
	// Connect is a completed callback: ConnectConnected, ConnectRefused (the provider or the
	// user refused, or the answer did not come from the provider) or ConnectFailed (the code
	// exchange failed).
	Connect(outcome string)
	// Refresh is a refresh attempt that reached the token endpoint: RefreshRefreshed,
	// RefreshRefused (invalid_grant: the TI was deleted) or RefreshFailed (anything else: the
	// TI was kept).
	Refresh(outcome string)
}

// Outcomes of Events.
const (
	ConnectConnected = "connected"
	ConnectRefused   = "refused"
	ConnectFailed    = "failed"
	RefreshRefreshed = "refreshed"
	RefreshRefused   = "refused"
	RefreshFailed    = "failed"
)

// WithEvents sets the receiver of the service's events (default and nil: none).
func WithEvents(e Events) Option {
	return func(s *Service) {
		if e != nil {
			s.events = e
		}
	}
}

type noEvents struct{}

func (noEvents) Connect(string) {}
func (noEvents) Refresh(string) {}
