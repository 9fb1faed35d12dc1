package plugin

import (
	"errors"
	"strconv"

	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// maxCacheEntries bounds the per-VM decision-bundle cache.
const maxCacheEntries = 10000

// Filter is the plugin's root: the parsed configuration and the per-VM state shared by the
// streams of one VM (the bundle cache, metric ids, the log writer and its buffer). A VM is
// single-threaded, so none of it needs locking.
type Filter struct {
	host      RootHost
	cfg       *pluginconf.Config
	routes    routeTable
	cache     *bundleCache
	inflight  int // check calls dispatched and not yet answered (limits.go)
	logWriter *authlog.Writer
	metrics   metrics
	logBuf    []byte
	propBuf   []byte // scratch for published properties
}

// New returns a Filter that reports through host. It serves nothing until Configure succeeds.
func New(host RootHost) *Filter {
	return &Filter{host: host, metrics: metrics{host: host}, propBuf: make([]byte, 0, 64)}
}

// Configure parses the plugin configuration (the JSON subset of the gateway config). An error
// fails proxy_on_configure: Envoy rejects the configuration, and the ABI layer answers the
// streams of an unconfigured plugin with 500 (fail closed).
func (f *Filter) Configure(config []byte) error {
	cfg, err := pluginconf.Parse(config)
	if err != nil {
		return err
	}
	fields := authlog.DefaultFields()
	if len(cfg.AuthorizeLogFields) > 0 {
		if fields, err = authlog.ParseFields(cfg.AuthorizeLogFields); err != nil {
			return errors.New("plugin configuration: authorize_log_fields: " + err.Error())
		}
	}
	if err := authlog.ParseRedact(cfg.AuthorizeLogRedact); err != nil {
		return errors.New("plugin configuration: " + err.Error())
	}
	routes := make([]*route, 0, len(cfg.Routes))
	for i := range cfg.Routes {
		r := &route{Route: cfg.Routes[i]}
		if r.Policy != nil {
			if r.policy, err = policy.Parse(r.Policy); err != nil {
				return errors.New("plugin configuration: routes[" + strconv.Itoa(i) + "].policy: " + err.Error())
			}
		}
		if r.PolicyShadow != nil {
			if r.shadow, err = policy.ParseKey("policy_shadow", r.PolicyShadow); err != nil {
				return errors.New("plugin configuration: routes[" + strconv.Itoa(i) + "]." + err.Error())
			}
		}
		r.origin = r.Scheme + "://" + r.Host
		r.resourceMetadata = r.origin + paths.ProtectedResourceMetadata
		if r.PathPrefix != "/" {
			r.resourceMetadata += r.PathPrefix
		}
		r.challenge = challengeParams(r.resourceMetadata)
		r.stats.prefix = routeStatPrefix(&r.Route)
		routes = append(routes, r)
	}
	f.cfg = cfg
	f.routes = newRouteTable(cfg, routes)
	f.cache = newBundleCache(maxCacheEntries)
	f.logWriter = authlog.NewWriterOptions(fields, authlog.Options{Redact: cfg.AuthorizeLogRedact, MaxParameterBytes: cfg.AuthorizeLogMaxParameterBytes})
	return nil
}

// NewStream returns the handler of one HTTP stream.
func (f *Filter) NewStream(h StreamHost) Stream {
	return &stream{f: f, h: h}
}
