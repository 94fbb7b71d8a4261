// Package pipeline runs a grading job: input units are read in batches,
// graded by a bounded pool of workers, put back in input order and written
// as result parts, with a summary and a manifest. It is the engine between
// the input contract (package inputs) and the output contract (package
// results): the plan of a run, decoding, grading with the watchdog,
// judging and remote verifiers, reuse of an earlier run, and the writer.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package pipeline
