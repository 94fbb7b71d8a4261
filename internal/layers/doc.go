// Package layers holds the test that keeps the map of the house: the
// table of packages and layers in docs/contributing.md, where a package
// imports only packages of lower layers.
package layers
