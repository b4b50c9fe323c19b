import Foundation

/// Varnish and Squid as the reverse-proxy peers of scenarios 15–17: each in
/// front of the bench origin, started with its own configuration in its own
/// folder under the run's work directory, keeping everything in memory.
extension Launcher {
    /// `varnishd -F` with malloc storage and a VCL that keeps every response
    /// for a day (no grace, no cookies): every object stays fresh in memory.
    func varnish(memoryMB: Int) -> ServerProcess? {
        guard let binary = findExecutable("varnishd") else { return nil }
        let directory = work + "/varnish"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let vcl = """
                vcl 4.1;
                backend origin { .host = "127.0.0.1"; .port = "\(origin.port)"; }
                sub vcl_recv {
                    unset req.http.Cookie;
                    return (hash);
                }
                sub vcl_backend_response {
                    set beresp.ttl = 1d;
                    set beresp.grace = 0s;
                    unset beresp.http.Set-Cookie;
                    return (deliver);
                }

                """
            try vcl.write(toFile: directory + "/bench.vcl", atomically: true, encoding: .utf8)
            return try ServerProcess.startPeer(.varnish, binary: binary, directory: directory,
                                               logFile: directory + "/varnishd.log") { port in
                // -j none: no privilege separation (the bench may run as root in a container);
                // -n: the working folder (shared memory log) in the run's folder, not /var/lib.
                ["-F", "-j", "none", "-n", directory + "/run", "-a", "127.0.0.1:\(port)",
                 "-f", directory + "/bench.vcl", "-s", "malloc,\(memoryMB)m", "-T", "none",
                 "-p", "default_ttl=86400", "-p", "default_grace=0"]
            }
        } catch {
            FileHandle.standardError.write(Data("httpcache-bench: varnish left out: \(error)\n".utf8))
            return nil
        }
    }

    /// `squid -N` as an accelerator of the bench origin, memory cache only
    /// (no `cache_dir`), objects up to `maxObjectMB` kept in memory.
    func squid(memoryMB: Int, maxObjectMB: Int) -> ServerProcess? {
        guard let binary = findExecutable("squid") else { return nil }
        let directory = work + "/squid"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            // Squid drops root for its effective user: that user writes its log and pid here.
            let user = geteuid() == 0 ? "proxy" : nil
            if let user, let entry = getpwnam(user) { chown(directory, entry.pointee.pw_uid, entry.pointee.pw_gid) }
            return try ServerProcess.startPeer(.squid, binary: binary, directory: directory,
                                               logFile: directory + "/squid.out") { [origin] port in
                let conf = """
                    http_port 127.0.0.1:\(port) accel defaultsite=127.0.0.1 no-vhost
                    cache_peer 127.0.0.1 parent \(origin.port) 0 no-query no-digest originserver name=origin
                    http_access allow all
                    cache_peer_access origin allow all
                    never_direct allow all
                    cache_mem \(memoryMB) MB
                    maximum_object_size_in_memory \(maxObjectMB) MB
                    maximum_object_size \(maxObjectMB) MB
                    memory_cache_mode always
                    refresh_pattern . 1440 100% 1440
                    workers 1
                    \(user.map { "cache_effective_user \($0)" } ?? "")
                    pid_filename \(directory)/squid.pid
                    cache_log \(directory)/cache.log
                    access_log none
                    cache_store_log none
                    logfile_rotate 0
                    coredump_dir \(directory)
                    netdb_filename none
                    pinger_enable off
                    shutdown_lifetime 0 seconds
                    visible_hostname httpcache-bench
                    client_persistent_connections on
                    server_persistent_connections on
                    client_idle_pconn_timeout 5 minutes

                    """
                try conf.write(toFile: directory + "/squid.conf", atomically: true, encoding: .utf8)
                return ["-N", "-f", directory + "/squid.conf"]
            }
        } catch {
            FileHandle.standardError.write(Data("httpcache-bench: squid left out: \(error)\n".utf8))
            return nil
        }
    }

    /// httpcache in front of the bench origin (`serve --origin`), one loop.
    func reverseProxy() -> ServerProcess? {
        do {
            return try ServerProcess.startProxy(binary: proxyBinary, cacheDirectory: work + "/proxy-reverse-cache",
                                                logFile: work + "/proxy-reverse.log", originBase: origin.baseURL,
                                                loops: proxySupportsLoops ? 1 : nil, reverse: true)
        } catch {
            FileHandle.standardError.write(Data("httpcache-bench: httpcache --origin did not start: \(error)\n".utf8))
            return nil
        }
    }
}
