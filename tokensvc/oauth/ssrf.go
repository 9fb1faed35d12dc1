package oauth

import (
	"net/http"
	"net/netip"

	"github.com/mcpmesh/gateway/tokensvc/internal/netguard"
)

// The SSRF guard of client ID metadata document and jwks_uri fetches is package netguard's,
// shared with upstream discovery; these names keep this package's API.

// ErrForbiddenAddress is wrapped by the error of a client metadata document
// fetch that would have connected to a non-public address.
var ErrForbiddenAddress = netguard.ErrForbiddenAddress

// DocumentClientOptions configures NewDocumentClient.
type DocumentClientOptions = netguard.ClientOptions

// PublicAddr reports whether a is a public unicast address (netguard.PublicAddr).
func PublicAddr(a netip.Addr) bool { return netguard.PublicAddr(a) }

// NewDocumentClient returns the SSRF-guarded client of client ID metadata document fetches
// (netguard.NewClient).
func NewDocumentClient(o DocumentClientOptions) *http.Client { return netguard.NewClient(o) }
