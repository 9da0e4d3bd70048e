package tidal

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestDecodeArgsEngineTLS(t *testing.T) {
	a, err := DecodeArgs(&runtime.Unknown{Raw: []byte(`{"engineAddress": "tidal-engine:50051",
	  "engineTLS": {"caFile": "/tls/ca.crt", "certFile": "/tls/tls.crt", "keyFile": "/tls/tls.key", "serverName": "tidal-engine"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	f := a.clientConfig("p").TLS
	if f.CAFile != "/tls/ca.crt" || f.CertFile != "/tls/tls.crt" || f.KeyFile != "/tls/tls.key" || f.ServerName != "tidal-engine" {
		t.Fatalf("TLS files = %+v", f)
	}
	if a.clientConfig("p").Insecure {
		t.Fatal("insecure without engineInsecure")
	}
	for raw, want := range map[string]string{
		`{"engineTLS": {"caFile": "/tls/ca.crt"}}`:                                   "engineTLS: caFile, certFile and keyFile are all required",
		`{"engineTLS": {"caFile": "a", "certFile": "b", "keyFile": "c", "ca": "x"}}`: "unknown field(s) engineTLS.ca",
		`{"engineTLS": "yes"}`:        "engineTLS",
		`{"engineInsecure": "maybe"}`: "engineInsecure",
	} {
		_, err := DecodeArgs(&runtime.Unknown{Raw: []byte(raw)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", raw, err, want)
		}
	}
	a, err = DecodeArgs(&runtime.Unknown{Raw: []byte(`{"engineAddress": "10.0.0.1:50051", "engineInsecure": true}`)})
	if err != nil || !a.clientConfig("p").Insecure {
		t.Fatalf("engineInsecure: %+v, %v", a, err)
	}
}
