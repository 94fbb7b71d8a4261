package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// HTTPClient makes the requests of https:// and http:// inputs; tests
// give it one that trusts their server.
var HTTPClient = http.DefaultClient

// httpSource reads one object over HTTP with range requests.
type httpSource struct {
	url  string
	name string
}

func newHTTPSource(raw string) (*httpSource, error) {
	return &httpSource{url: raw, name: Redact(raw)}, nil
}

// statusError is the error of an unexpected HTTP status.
type statusError struct{ code int }

func (e *statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
}

// stat reads the object's size and ETag from the answer to a request of
// its first byte (a HEAD is not always allowed on presigned URLs).
func (s *httpSource) stat(ctx context.Context) (size int64, etag string, err error) {
	err = retry(ctx, func() error {
		gets.Add(1)
		resp, err := s.get(ctx, 0, 1)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1))
		etag = resp.Header.Get("ETag")
		switch resp.StatusCode {
		case http.StatusPartialContent:
			cr := resp.Header.Get("Content-Range") // bytes 0-0/SIZE
			_, total, ok := strings.Cut(cr, "/")
			if size, err = strconv.ParseInt(total, 10, 64); !ok || err != nil {
				return fmt.Errorf("bad Content-Range %q", cr)
			}
			return nil
		case http.StatusOK:
			return errors.New("the server does not answer range requests")
		case http.StatusRequestedRangeNotSatisfiable:
			size = 0 // an empty object
			return nil
		}
		return &statusError{resp.StatusCode}
	})
	if err != nil {
		return 0, "", fmt.Errorf("stat %s: %w", s.name, err)
	}
	return size, etag, nil
}

// get asks for n bytes from off (to the end when n is -1).
func (s *httpSource) get(ctx context.Context, off, n int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, errors.New("bad URL")
	}
	if n < 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
	} else {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	resp, err := HTTPClient.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			// url.Error repeats the URL, with its query: keep the cause.
			return nil, fmt.Errorf("GET: %w", ue.Unwrap())
		}
		return nil, err
	}
	return resp, nil
}

func (s *httpSource) rangeReader(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	resp, err := s.get(ctx, off, n)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, ErrNotExist
		}
		return nil, &statusError{resp.StatusCode}
	}
	return resp.Body, nil
}
