// Package tcp runs the generals of package byzantine as separate processes
// that talk over TCP.
//
// # Guarantees
//
// Every general has its own ed25519 identity. Connections are authenticated
// both ways by a challenge-response against the public keys of a Cluster,
// so the receiver knows the sender of every message (A2): the sender is the
// authenticated peer of the connection, never a field of the message.
// Frames are a 4-byte big-endian length and a payload of at most
// DefaultMaxFrame bytes; a peer that announces a larger frame or sends one
// that does not decode is counted, disconnected and reported gone, and the
// other connections carry on. Rounds are driven by byzantine.RunGeneral:
// a round ends when every peer sent its end-of-round marker or at its
// deadline (A3 by timeouts), so a silent or cut-off general costs at most
// one round timeout per round and a loyal one none.
//
// # Running
//
// Launch starts n generals through a Spawner (CommandSpawner for OS
// processes, LocalSpawner for goroutines over loopback TCP), each of which
// runs Serve: it generates its key, listens, reports its address and public
// key, receives the cluster and a start time, runs, and reports its result.
// A general stops when its input from the coordinator ends
// (ErrCoordinatorGone), so it never outlives its coordinator's death.
// For generals on several machines, each runs RunNode with a shared cluster
// file, the same byzantine.Config and the same start time; the dlm command
// wraps this as "dlm generals node" (see docs/agreement.md).
//
// # Runs and resources
//
// Both sides of a handshake sign the run id (RunID: the cluster and the
// run's Terms: algorithm, n, m, majority, round timeout, interactive,
// start time and sequence number) and every end-of-round marker carries
// it, so generals of another run, even with the same keys, are refused;
// a hello carries its terms, so one signed for other terms is named
// (Node.OtherTerms: which flag differs, with both values). The
// accept loop backs off on errors and keeps accepting. A dialer's first
// frame is its signed hello (a nonce seen before in the run is refused);
// it is read and checked as the connection is accepted, before the next
// one is taken (on Linux the kernel hands a connection over only once
// data has arrived), so a general's dial needs no room and no stranger,
// however fast it connects, can close it. At most MaxHandshakes
// connections whose dialer has not proven itself may wait; room is made
// only by closing one that had time to send its hello. Each peer has one
// inbound connection (a newer proven one replaces it) and a queue of
// PeerQueue events, so a fast or hostile peer slows only its own
// connection. Each peer also has its own outgoing queue and writer: a
// send never waits for the network, and a peer that stops reading costs
// only its own writer the write timeout. Launch marks a general whose
// process dies as crashed and keeps the survivors' results.
//
// # Links that break
//
// The frames of one link form a numbered stream. A link that breaks
// after its handshake is dialled again until the run's last deadline;
// the listener's signed answer says how many frames it took, and the
// dialer, which keeps every frame until it is acknowledged (after each
// end-of-round marker and every 256 frames), sends the rest again. A
// frame lost with a reset connection, even one the kernel had accepted,
// is so delivered once and in order, and a link that comes back in time
// is no fault. An orderly close means the peer left.
//
// # Schedule and faults
//
// Round 0 starts at the start time at the latest, whatever links are
// missing; every handshake ends by the dial's deadline, and failed dials
// and handshakes are retried until the run's last deadline, each link used
// from when it is up. A peer without a link when a message is due, that
// left (closed its connection in order) before the end, or that misses a
// round's deadline is a fault the general reports
// (byzantine.GeneralResult.Faults), counted with the traitors against m.
// Package tcptest plays traitors that attack timing and links.
//
// Handshake nonces and process keys come from crypto/rand: authentication
// must not be predictable from a seed.
package tcp
