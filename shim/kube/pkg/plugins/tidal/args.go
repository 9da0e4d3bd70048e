package tidal

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// Args are the plugin's arguments (KubeSchedulerConfiguration pluginConfig, name: Tidal):
//
//	pluginConfig:
//	- name: Tidal
//	  args:
//	    engineAddress: unix:///run/tidal/engine.sock   # or HOST:PORT
//	    timeoutMs: 2000                                # each engine call
//	    syncFlushMs: 50                                # Sync batching interval
//	    syncBatch: 500                                 # objects per Sync message
//	    disruptionIntervalMs: 2000                     # how often the engine's disruptions are polled (notices, evictions)
//	    overdueIntervalMs: 10000                       # an older engine (no Disruptions): runtime-limit evictions at most this often
//	    activationIntervalMs: 1000                     # how often pods another front door planned ahead are activated
//	    incompleteEventMs: 30000                       # a member waiting this long for its gang's others gets an event
//	    holder: ""                                     # the KUBERNETES door's lease holder ("": PROFILE@HOSTNAME)
//	    leaseTtlMs: 15000                              # how long the engine keeps the lease after the stream closed
//	    engineTLS:                                     # mutual TLS to a TCP engine (files re-read when they change)
//	      caFile: /etc/tidal/tls/ca.crt                #   the CA of the engine's certificate
//	      certFile: /etc/tidal/tls/tls.crt             #   this scheduler's client certificate
//	      keyFile: /etc/tidal/tls/tls.key
//	      serverName: tidal-engine                     #   a name in the engine's certificate ("": the address's host)
//	    engineInsecure: false                          # allow plaintext to a non-loopback TCP engine
//
// Profiles share one engine client per engineAddress: the first profile's args configure it (holder,
// leaseTtlMs, timeoutMs, syncFlushMs, syncBatch) and its disruption poller (disruptionIntervalMs,
// overdueIntervalMs).
type Args struct {
	EngineAddress        string   `json:"engineAddress,omitempty"`
	TimeoutMs            int      `json:"timeoutMs,omitempty"`
	SyncFlushMs          int      `json:"syncFlushMs,omitempty"`
	SyncBatch            int      `json:"syncBatch,omitempty"`
	DisruptionIntervalMs int      `json:"disruptionIntervalMs,omitempty"`
	OverdueIntervalMs    int      `json:"overdueIntervalMs,omitempty"`
	ActivationIntervalMs int      `json:"activationIntervalMs,omitempty"`
	IncompleteEventMs    int      `json:"incompleteEventMs,omitempty"`
	Holder               string   `json:"holder,omitempty"`
	LeaseTtlMs           int      `json:"leaseTtlMs,omitempty"`
	EngineTLS            *TLSArgs `json:"engineTLS,omitempty"`
	EngineInsecure       bool     `json:"engineInsecure,omitempty"`
}

// TLSArgs: engineTLS, the client side of the engine's mutual TLS.
type TLSArgs struct {
	CAFile     string `json:"caFile,omitempty"`
	CertFile   string `json:"certFile,omitempty"`
	KeyFile    string `json:"keyFile,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

var tlsArgKeys = []string{"caFile", "certFile", "keyFile", "serverName"}

var argKeys = []string{"engineAddress", "timeoutMs", "syncFlushMs", "syncBatch", "disruptionIntervalMs",
	"overdueIntervalMs", "activationIntervalMs", "incompleteEventMs", "holder", "leaseTtlMs", "engineTLS", "engineInsecure"}

// maxHolderLen bounds the holder arg (it appears in the engine's logs and refusals).
const maxHolderLen = 256

// DecodeArgs reads the plugin arguments (nil: all defaults), refusing unknown keys and values out
// of range, each error naming the field.
func DecodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	if err := frameworkruntime.DecodeInto(obj, &a); err != nil {
		return a, fmt.Errorf("%s args: %w", Name, err)
	}
	if u, ok := obj.(*runtime.Unknown); ok && len(u.Raw) > 0 {
		var raw map[string]json.RawMessage
		if err := yaml.Unmarshal(u.Raw, &raw); err == nil {
			var unknown []string
			for k := range raw {
				if !contains(argKeys, k) {
					unknown = append(unknown, k)
				}
			}
			if len(unknown) > 0 {
				sort.Strings(unknown)
				return a, fmt.Errorf("%s args: unknown field(s) %s (accepted: %s)", Name,
					strings.Join(unknown, ", "), strings.Join(argKeys, ", "))
			}
			if t, ok := raw["engineTLS"]; ok {
				var tm map[string]json.RawMessage
				if err := yaml.Unmarshal(t, &tm); err != nil {
					return a, fmt.Errorf("%s args: engineTLS: must be a map of %s", Name, strings.Join(tlsArgKeys, ", "))
				}
				for k := range tm {
					if !contains(tlsArgKeys, k) {
						unknown = append(unknown, "engineTLS."+k)
					}
				}
				if len(unknown) > 0 {
					sort.Strings(unknown)
					return a, fmt.Errorf("%s args: unknown field(s) %s (accepted: %s)", Name,
						strings.Join(unknown, ", "), strings.Join(tlsArgKeys, ", "))
				}
			}
		}
	}
	if a.EngineAddress == "" {
		a.EngineAddress = engineclient.DefaultAddress
	}
	if a.TimeoutMs == 0 {
		a.TimeoutMs = 2000
	}
	if a.SyncFlushMs == 0 {
		a.SyncFlushMs = 50
	}
	if a.SyncBatch == 0 {
		a.SyncBatch = 500
	}
	if a.DisruptionIntervalMs == 0 {
		a.DisruptionIntervalMs = 2000
	}
	if a.OverdueIntervalMs == 0 {
		a.OverdueIntervalMs = 10000
	}
	if a.ActivationIntervalMs == 0 {
		a.ActivationIntervalMs = 1000
	}
	if a.LeaseTtlMs == 0 {
		a.LeaseTtlMs = 15000
	}
	if a.IncompleteEventMs == 0 {
		a.IncompleteEventMs = 30000
	}
	switch {
	case a.TimeoutMs < 1 || a.TimeoutMs > 60000:
		return a, fmt.Errorf("%s args: timeoutMs: must be 1..60000, got %d", Name, a.TimeoutMs)
	case a.SyncFlushMs < 1 || a.SyncFlushMs > 10000:
		return a, fmt.Errorf("%s args: syncFlushMs: must be 1..10000, got %d", Name, a.SyncFlushMs)
	case a.SyncBatch < 1 || a.SyncBatch > 100000:
		return a, fmt.Errorf("%s args: syncBatch: must be 1..100000, got %d", Name, a.SyncBatch)
	case a.DisruptionIntervalMs < 100 || a.DisruptionIntervalMs > 600000:
		return a, fmt.Errorf("%s args: disruptionIntervalMs: must be 100..600000, got %d", Name, a.DisruptionIntervalMs)
	case a.OverdueIntervalMs < 100 || a.OverdueIntervalMs > 3600000:
		return a, fmt.Errorf("%s args: overdueIntervalMs: must be 100..3600000, got %d", Name, a.OverdueIntervalMs)
	case a.ActivationIntervalMs < 100 || a.ActivationIntervalMs > 60000:
		return a, fmt.Errorf("%s args: activationIntervalMs: must be 100..60000, got %d", Name, a.ActivationIntervalMs)
	case a.IncompleteEventMs < 1000 || a.IncompleteEventMs > 3600000:
		return a, fmt.Errorf("%s args: incompleteEventMs: must be 1000..3600000, got %d", Name, a.IncompleteEventMs)
	case a.LeaseTtlMs < 1000 || a.LeaseTtlMs > 600000:
		return a, fmt.Errorf("%s args: leaseTtlMs: must be 1000..600000, got %d", Name, a.LeaseTtlMs)
	case len(a.Holder) > maxHolderLen || strings.IndexFunc(a.Holder, badHolderRune) >= 0:
		return a, fmt.Errorf("%s args: holder: %q must be at most %d characters without spaces, quotes or control characters",
			Name, a.Holder, maxHolderLen)
	case !strings.HasPrefix(a.EngineAddress, "unix://") && !strings.Contains(a.EngineAddress, ":"):
		return a, fmt.Errorf("%s args: engineAddress: %q is neither unix:///PATH nor HOST:PORT", Name, a.EngineAddress)
	case a.EngineTLS != nil && (a.EngineTLS.CAFile == "" || a.EngineTLS.CertFile == "" || a.EngineTLS.KeyFile == ""):
		return a, fmt.Errorf("%s args: engineTLS: caFile, certFile and keyFile are all required", Name)
	}
	return a, nil
}

func badHolderRune(r rune) bool { return r <= ' ' || r == '"' || r == 0x7f }

// clientConfig: the engine client's configuration; an empty holder becomes PROFILE@HOSTNAME.
func (a Args) clientConfig(profile string) engineclient.Config {
	holder := a.Holder
	if holder == "" {
		holder = engineclient.DefaultHolder(profile)
	}
	return engineclient.Config{
		Address:       a.EngineAddress,
		Timeout:       time.Duration(a.TimeoutMs) * time.Millisecond,
		FlushInterval: time.Duration(a.SyncFlushMs) * time.Millisecond,
		MaxBatch:      a.SyncBatch,
		Holder:        holder,
		LeaseTTL:      time.Duration(a.LeaseTtlMs) * time.Millisecond,
		TLS:           a.tlsFiles(),
		Insecure:      a.EngineInsecure,
		Leadership:    leader.Term,
	}
}

func (a Args) tlsFiles() engineclient.TLSFiles {
	if a.EngineTLS == nil {
		return engineclient.TLSFiles{}
	}
	return engineclient.TLSFiles{CAFile: a.EngineTLS.CAFile, CertFile: a.EngineTLS.CertFile, KeyFile: a.EngineTLS.KeyFile,
		ServerName: a.EngineTLS.ServerName}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
