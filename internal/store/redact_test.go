package store

import (
	"testing"
)

// TestRedacted removes the credentials an SDK's error may carry, and
// leaves the rest of the message as it was.
func TestRedacted(t *testing.T) {
	t.Setenv("AZURE_STORAGE_KEY", "a2V5LXRoYXQtbXVzdC1ub3QtbGVhaw==")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Y29ubi1rZXktc2VjcmV0;EndpointSuffix=core.windows.net")
	tests := []struct{ name, in, want string }{
		{"SAS in a URL", `Get "https://acct.blob.core.windows.net/c?comp=list&sig=abc%2Bdef%3D&sv=2022": dial tcp: refused`, `Get "https://acct.blob.core.windows.net/c?comp=list&sig=REDACTED&sv=2022": dial tcp: refused`},
		{"presigned S3 URL", `GET https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=0123abcd`, `GET https://b.s3.amazonaws.com/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED`},
		{"Azure's AuthenticationFailed", `The MAC signature found in the HTTP request 'q1w2e3r4=' is not the same`, `The MAC signature found in the HTTP request 'REDACTED' is not the same`},
		{"shared key header", `Authorization: SharedKey acct:q1w2e3r4= x`, `Authorization: SharedKey REDACTED x`},
		{"bearer token", `Authorization: Bearer ya29.a0AfB_secret`, `Authorization: Bearer REDACTED`},
		{"token form", `oauth2: "invalid_grant" "client_secret=s3cr3t&refresh_token=1%2F%2Fr"`, `oauth2: "invalid_grant" "client_secret=REDACTED&refresh_token=REDACTED"`},
		{"token JSON", `{"access_token": "ya29.x", "expires_in": 3599}`, `{"access_token": "REDACTED", "expires_in": 3599}`},
		{"account key", `key a2V5LXRoYXQtbXVzdC1ub3QtbGVhaw== refused`, `key REDACTED refused`},
		{"connection string key", `bad key Y29ubi1rZXktc2VjcmV0`, `bad key REDACTED`},
		{"nothing secret", `blob (key "in/a.jsonl") (code=PermissionDenied): GET http://127.0.0.1:1/acct/c/in%2Fa.jsonl`, `blob (key "in/a.jsonl") (code=PermissionDenied): GET http://127.0.0.1:1/acct/c/in%2Fa.jsonl`},
	}
	for _, tt := range tests {
		if got := redacted(tt.in); got != tt.want {
			t.Errorf("%s: redacted(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
