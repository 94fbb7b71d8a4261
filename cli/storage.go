package cli

// The object storage drivers of INPUT and --out URLs (s3://, gs://,
// azblob://, file://). Registered here, in the command only, so that the
// library packages and their tests do not link the cloud SDKs; each SDK
// is configured only when a URL of its scheme is opened.
import (
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
)
