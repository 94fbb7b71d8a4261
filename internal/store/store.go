// Package store reads and writes objects in object storage (s3://, gs://,
// azblob://, file:// through gocloud.dev/blob; https:// read-only through
// HTTP range requests) for the inputs and results of a run.
//
// The drivers of the blob schemes are registered by blank imports in the
// command (package gocloud.dev/blob/s3blob and its peers), so that their
// SDKs stay out of programs and tests that do not use them: this package
// itself depends on gocloud.dev/blob only.
//
// Credentials come from each SDK's standard chain (for S3: the AWS_*
// variables, AWS_ENDPOINT_URL for S3-compatible servers, profiles and
// instance roles). A URL may carry user information or a query (a
// presigned URL's signature, a bucket's options); Redact removes both and
// every name this package puts in an error is redacted. The errors of the
// SDKs are scrubbed too: a service's error body may echo a request's
// signature or token, and a request URL its SAS token.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// IsURL reports whether name is an object storage URL rather than a local
// path: it has a scheme of a registered blob driver, or https, http or
// file.
func IsURL(name string) bool {
	scheme, _, ok := strings.Cut(name, "://")
	if !ok || scheme == "" {
		return false
	}
	switch scheme {
	case "https", "http", "file", "s3", "gs", "azblob":
		return true
	}
	return blob.DefaultURLMux().ValidBucketScheme(scheme)
}

// Redact returns the URL raw without user information, query and
// fragment, which may carry credentials (a presigned URL's signature) or
// bucket options. A string that is not a URL is returned unchanged. A
// file URL's host localhost is dropped: file://localhost/a and file:///a
// name one file, and have one name. A "?" in a bucket URL's key is kept
// as it is, a glob's wildcard.
func Redact(raw string) string {
	u, err := parseURL(raw)
	if err != nil || u.Scheme == "" {
		if i := strings.IndexAny(raw, "?#"); i >= 0 && strings.Contains(raw, "://") {
			return raw[:i]
		}
		return raw
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	if u.Scheme == "file" && u.Host == "localhost" {
		u.Host = ""
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		// A bucket URL's "?" wildcard reads as given (parseURL).
		return strings.ReplaceAll(u.String(), "%3F", "?")
	}
	return u.String()
}

// parseURL parses raw as url.Parse does, except in a bucket URL (s3://,
// gs://, azblob://, file://), where a "?" starts the query only when the
// rest is bucket options (name=value pairs joined by "&"): any other "?"
// belongs to the key, where it is a glob's one-character wildcard
// (s3://b/shard-?.jsonl, or s3://b/shard-?.jsonl?region=x with options).
func parseURL(raw string) (*url.URL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return url.Parse(raw)
	}
	switch scheme {
	case "https", "http":
		return url.Parse(raw)
	}
	query := ""
	for i := 0; i < len(rest); i++ {
		if rest[i] == '?' && isOptions(rest[i+1:]) {
			rest, query = rest[:i], rest[i+1:]
			break
		}
	}
	u, err := url.Parse(scheme + "://" + strings.ReplaceAll(rest, "?", "%3F"))
	if err != nil {
		return nil, err
	}
	u.RawQuery = query
	return u, nil
}

// isOptions reports whether q reads as a URL's options: name=value pairs
// joined by "&", each name of letters, digits, "_", "-" or ".".
func isOptions(q string) bool {
	if q == "" {
		return false
	}
	for _, kv := range strings.Split(q, "&") {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return false
		}
		for _, c := range name {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
				return false
			}
		}
	}
	return true
}

// Location is a place in object storage named by a URL: a bucket and a
// key (an object's, or a prefix). Make one with Open; Close it.
type Location struct {
	u      *url.URL // as given: the bucket's options are in its query
	bucket *blob.Bucket
	// Key is the key of the URL, without the leading slash.
	Key string
}

// Open opens the bucket of the URL raw. An https or http URL names one
// object and has no bucket: only OpenFile and Attributes work on it.
func Open(ctx context.Context, raw string) (*Location, error) {
	u, err := parseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: bad URL", Redact(raw))
	}
	l := &Location{u: u}
	switch u.Scheme {
	case "https", "http":
		return l, nil
	case "file":
		// file://data/a.jsonl would name /a.jsonl on host "data": a
		// relative path has no URL, and other hosts are not reached.
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%s: a file URL names an absolute path (file:///path), not host %q", Redact(raw), u.Host)
		}
		l.Key = strings.TrimPrefix(u.Path, "/")
		if l.bucket, err = blob.OpenBucket(ctx, "file:///?metadata=skip"); err != nil {
			return nil, fmt.Errorf("open %s: %w", Redact(raw), err)
		}
		return l, nil
	}
	l.Key = strings.TrimPrefix(u.Path, "/")
	bu := url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: u.RawQuery}
	if l.bucket, err = blob.OpenBucket(ctx, bu.String()); err != nil {
		return nil, fmt.Errorf("open %s: %w", Redact(raw), scrub(err, raw))
	}
	return l, nil
}

// Close releases the bucket.
func (l *Location) Close() error {
	if l.bucket == nil {
		return nil
	}
	return l.bucket.Close()
}

// URL returns the URL of key in the location's bucket, with the options
// of the URL the location was opened from (for opening), and Name its
// redacted form (for messages and records).
func (l *Location) URL(key string) string {
	u := *l.u
	u.Path = "/" + key
	u.RawPath = ""
	if u.Scheme == "file" {
		u.Host = ""
	}
	return u.String()
}

// Name returns the redacted URL of key, for messages and records.
func (l *Location) Name(key string) string { return Redact(l.URL(key)) }

// Object is an object found by List or Expand.
type Object struct {
	// Key is the object's key in its bucket.
	Key string
	// Size is its size in bytes.
	Size int64
	// ModTime is when it was last written, as the listing reports it.
	ModTime time.Time
}

// Attributes returns the size and ETag of the object key, or an error
// wrapping ErrNotExist when there is none.
func (l *Location) Attributes(ctx context.Context, key string) (size int64, etag string, err error) {
	if l.bucket == nil {
		s, err := newHTTPSource(l.u.String())
		if err != nil {
			return 0, "", err
		}
		return s.stat(ctx)
	}
	var a *blob.Attributes
	err = retry(ctx, func() error {
		return guarded(func() (err error) {
			a, err = l.bucket.Attributes(ctx, key)
			return err
		})
	})
	if err != nil {
		return 0, "", fmt.Errorf("stat %s: %w", l.Name(key), scrub(err, l.u.String()))
	}
	return a.Size, a.ETag, nil
}

// guarded calls f, turning a panic of the storage library (which some
// drivers raise on an answer missing a header they expect, such as
// azureblob's on a HEAD without x-ms-creation-time) into an error: the
// run goes on with the other inputs, as after any failed request.
func guarded(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errLibrary, p)
		}
	}()
	return f()
}

// errLibrary is a panic of the storage library turned into an error: the
// same answer would fail again, so it is not retried.
var errLibrary = errors.New("the storage library failed on the server's answer")

// List returns the objects whose keys start with prefix, in lexicographic
// key order, every page of the listing.
func (l *Location) List(ctx context.Context, prefix string) ([]Object, error) {
	if l.bucket == nil {
		return nil, fmt.Errorf("list %s: an %s URL names one object, not a prefix", Redact(l.u.String()), l.u.Scheme)
	}
	var out []Object
	var token []byte
	for first := true; first || len(token) > 0; first = false {
		var page []*blob.ListObject
		next := blob.FirstPageToken
		if !first {
			next = token
		}
		err := retry(ctx, func() error {
			var err error
			page, token, err = l.bucket.ListPage(ctx, next, 1000, &blob.ListOptions{Prefix: prefix})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", l.Name(prefix), scrub(err, l.u.String()))
		}
		for _, o := range page {
			if !o.IsDir {
				out = append(out, Object{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Expand lists the objects the location's key names, as an input names
// them: a key ending in "/" (or empty) is a prefix, listed like a
// directory; a key with glob metacharacters (path.Match) lists the
// objects it matches; any other key names the object with that key if
// there is one, else the prefix key + "/". Objects come in lexicographic
// key order. An https URL is its one object.
func (l *Location) Expand(ctx context.Context) ([]Object, error) {
	if l.bucket == nil {
		size, _, err := l.Attributes(ctx, "")
		if err != nil {
			return nil, err
		}
		return []Object{{Key: l.Key, Size: size}}, nil
	}
	key := l.Key
	if strings.ContainsAny(key, "*?[") {
		if _, err := path.Match(key, ""); err != nil {
			return nil, fmt.Errorf("%s: bad glob: %v", Redact(l.u.String()), err)
		}
		// The listing's prefix is the key up to its first metacharacter
		// or escape: a\*b matches the key a*b, which a\ does not begin.
		all, err := l.List(ctx, key[:strings.IndexAny(key, "*?[\\")])
		if err != nil {
			return nil, err
		}
		var out []Object
		for _, o := range all {
			if ok, _ := path.Match(key, o.Key); ok {
				out = append(out, o)
			}
		}
		return out, nil
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		size, _, err := l.Attributes(ctx, key)
		if err == nil {
			return []Object{{Key: key, Size: size}}, nil
		}
		if !errors.Is(err, ErrNotExist) {
			return nil, err
		}
		key += "/"
	}
	return l.List(ctx, key)
}

// ErrNotExist is wrapped by the errors of objects that do not exist.
var ErrNotExist = errors.New("no such object")

// ReadAll reads the whole object key.
func (l *Location) ReadAll(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := retry(ctx, func() error {
		var err error
		data, err = l.bucket.ReadAll(ctx, key)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.Name(key), scrub(err, l.u.String()))
	}
	return data, nil
}

// Download copies the object key into w, which it truncates first on a
// retry when w is a file (an io.Seeker with Truncate).
func (l *Location) Download(ctx context.Context, key string, w interface {
	io.Writer
	io.Seeker
	Truncate(int64) error
}) error {
	err := retry(ctx, func() error {
		if _, err := w.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := w.Truncate(0); err != nil {
			return err
		}
		return l.bucket.Download(ctx, key, w, nil)
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", l.Name(key), scrub(err, l.u.String()))
	}
	return nil
}

// Upload writes the object key from r, which must be an io.Seeker to be
// retried: the object appears whole when the upload completes (a large
// one in parts, as a multipart upload), and not at all when it fails.
func (l *Location) Upload(ctx context.Context, key string, r io.ReadSeeker) error {
	err := retry(ctx, func() error {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return l.bucket.Upload(ctx, key, r, &blob.WriterOptions{ContentType: "application/octet-stream", BufferSize: UploadPartSize})
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", l.Name(key), scrub(err, l.u.String()))
	}
	return nil
}

// UploadPartSize is the size of the parts of a multipart upload; an
// object no larger than it is uploaded in one request.
var UploadPartSize = 16 << 20

// Delete removes the object key; an absent object is no error.
func (l *Location) Delete(ctx context.Context, key string) error {
	err := retry(ctx, func() error {
		err := l.bucket.Delete(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", l.Name(key), scrub(err, l.u.String()))
	}
	return nil
}

// Retries is how many times a failed request is tried again, after the
// SDK's own retries, with exponential backoff from RetryDelay; tests
// shorten the delay.
var (
	Retries    = 5
	RetryDelay = 200 * time.Millisecond
)

// retry calls fn until it succeeds, fails with an error that a retry
// cannot mend (not found, permission, bad argument), ctx is done, or
// Retries retries were spent.
func retry(ctx context.Context, fn func() error) error {
	delay := RetryDelay
	for i := 0; ; i++ {
		err := fn()
		if err == nil || i >= Retries || !retryable(err) {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// retryable reports whether err may pass on a retry.
func retryable(err error) bool {
	if errors.Is(err, ErrNotExist) || errors.Is(err, context.Canceled) || errors.Is(err, errLibrary) {
		return false
	}
	var se *statusError
	if errors.As(err, &se) { // an https:// source: 5xx and throttling pass
		return se.code >= 500 || se.code == http.StatusTooManyRequests || se.code == http.StatusRequestTimeout
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound, gcerrors.PermissionDenied, gcerrors.InvalidArgument,
		gcerrors.Unimplemented, gcerrors.FailedPrecondition, gcerrors.Canceled:
		return false
	}
	return true
}

// scrub turns a not-found error into ErrNotExist, and removes from err's
// text the query and user information of raw and every credential
// redacted finds. The error it returns still unwraps to err, for
// gcerrors.Code.
func scrub(err error, raw string) error {
	if err == nil {
		return nil
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		return ErrNotExist
	}
	msg := err.Error()
	clean := msg
	if raw != "" {
		if red := Redact(raw); red != raw {
			clean = strings.ReplaceAll(clean, raw, red)
		}
		if u, perr := parseURL(raw); perr == nil && u.RawQuery != "" {
			clean = strings.ReplaceAll(clean, u.RawQuery, "")
		}
	}
	clean = redacted(clean)
	if clean == msg {
		return err
	}
	return &scrubbed{msg: clean, err: err}
}

// scrubbed is an error whose text had credentials removed.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// secretPatterns match the credentials an SDK's error may carry: a
// request URL with a SAS token or a presigned query, a service's error
// body that echoes the request (Azure's AuthenticationFailed names the
// request's signature; a proxy may echo its headers), a token endpoint's
// answer echoing the form it was sent. The first group of each is kept.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b((?:sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-signature|x-goog-credential|access_token|refresh_token|id_token|client_secret|assertion|password|AccountKey|SharedAccessSignature)=)[^&;\s"'<>]+`),
	regexp.MustCompile(`(?i)("(?:access_token|refresh_token|id_token|client_secret|private_key|assertion)"\s*:\s*")[^"]+`),
	regexp.MustCompile(`(?i)\b((?:Bearer|Basic|SharedKey|SharedKeyLite) )[^\s"'<>]+`),
	regexp.MustCompile(`(?i)(signature found in the HTTP request ')[^']+`),
}

// secretEnv are the variables whose values are credentials of the SDKs
// gavel links; their values are removed from errors wherever they appear.
var secretEnv = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET",
	"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGEBLOB_CONNECTIONSTRING",
	"GOOGLE_OAUTH_ACCESS_TOKEN",
}

// redacted returns msg with credentials replaced by REDACTED: the values
// of signature and token parameters and fields, of Authorization
// schemes (Bearer, SharedKey), and the values of the credential
// variables (secretEnv; a connection string's AccountKey and
// SharedAccessSignature too) wherever they appear.
func redacted(msg string) string {
	for _, name := range secretEnv {
		v := os.Getenv(name)
		vals := []string{v}
		if strings.HasSuffix(name, "CONNECTIONSTRING") || strings.HasSuffix(name, "CONNECTION_STRING") {
			for _, part := range strings.Split(v, ";") {
				if k, val, ok := strings.Cut(part, "="); ok && (k == "AccountKey" || k == "SharedAccessSignature") {
					vals = append(vals, val)
				}
			}
		}
		for _, s := range vals {
			if len(s) >= 8 { // a short value would redact ordinary words
				msg = strings.ReplaceAll(msg, s, "REDACTED")
			}
		}
	}
	for _, re := range secretPatterns {
		msg = re.ReplaceAllString(msg, "${1}REDACTED")
	}
	return msg
}
