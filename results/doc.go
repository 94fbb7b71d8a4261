// Package results owns a result directory, the output contract of a run:
// its file names (manifest.json, summary.json, _SUCCESS, the parts'
// subdirectories, the per-part statistics and id hashes), the one
// Manifest type every reader and writer of manifest.json uses, the
// summary and its merge from the parts' statistics, the duplicate id
// count, object storage behind an output URL (Objects), and gavel commit,
// which joins the shards of a sharded run.
//
// The columns of the rewards, checks and judgements parts are defined once,
// in package columnar, which writes and reads them; this package says where
// the parts are and what a complete directory holds.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package results
