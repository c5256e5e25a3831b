// Package deploy holds the end-to-end tests of deploy/: the server image built from
// deploy/Dockerfile and run with deploy/compose.yaml (a server and two runners, and the PostgreSQL
// profile) under a real Docker engine. They are a package of their own, apart from package e2e,
// because building the image takes minutes on a small machine: as their own test binary they run
// beside the other end-to-end tests, with a time budget of their own, instead of holding every
// parallel test of package e2e back while they run one after the other.
package deploy
