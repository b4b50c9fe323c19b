// HLS playlists (RFC 8216 and draft-pantos-hls-rfc8216bis): detection,
// URI rewriting and parsing, pure and byte-based. The proxy rewrites
// playlists on the way out so that every URI in them leads back to it; a
// preloader reads them to know what to fetch.

/// Namespace of the stateless HLS functions (detection, rewriting, live rules).
package enum HLS {}
