// Package report compares and summarises result directories: the paired
// regression report of `gavel diff`, the leaderboard of `gavel leaderboard`,
// the run report, and the judge agreement and calibration tables. The
// statistics they rest on live in package stats.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package report
