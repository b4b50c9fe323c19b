import Foundation

/// Scenarios 12 and 13: hits (random ranges) and streaming from an encrypted
/// cache folder (`--encryption-key-file`), against the run's one-loop proxy
/// on a plain folder, alternating in the same run. Encrypted hits leave
/// sendfile: every byte is read, decrypted (AES-256-XTS) and copied.
extension Bench {
    func encryptedScenarios(ranges: Bool, streaming: Bool) -> [ScenarioResult] {
        let wanted = [(12, HitKind.ranges, ranges), (13, HitKind.streaming, streaming)].filter { $0.2 }
        let prefix = "encrypted folder vs plain — "
        let encryptedName = "httpcache-encrypted"
        func notMeasured(_ reason: String) -> [ScenarioResult] {
            wanted.map { id, kind, _ in
                log("scenario \(id): not measured: \(reason)")
                return ScenarioResult(id: id, title: prefix + "\(kind)", columns: [], rows: [], peers: [], ratios: [:],
                                      targets: [Targets.unmeasured(target(kind), because: reason)],
                                      notes: ["not measured: \(reason)"])
            }
        }
        guard launcher.proxySupports("--encryption-key-file") else { return notMeasured("--encryption-key-file unsupported") }
        let keyFile = launcher.work + "/encryption.key"
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        guard FileManager.default.createFile(atPath: keyFile, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600])
        else { return notMeasured("cannot write \(keyFile)") }
        let encrypted: ServerProcess
        do {
            encrypted = try launcher.proxy(name: "proxy-encrypted", extraArguments: ["--encryption-key-file", keyFile])
        } catch {
            return notMeasured("httpcache --encryption-key-file did not start: \(error)")
        }
        encrypted.label = encryptedName
        defer { encrypted.stop() }
        return wanted.map { id, kind, _ in
            hitScenario(kind, id: id, servers: [proxy, encrypted], prefix: prefix) { result in
                let column = kind == .streaming ? "MB/s" : "req/s"
                // addRatios gives plain / encrypted: the target is its inverse.
                let ratio = result.ratios[encryptedName]?[column].map { 1 / $0 }
                return [Targets.atLeast(self.target(kind), ratio, Targets.encryptedOverPlain(streaming: kind == .streaming),
                                        unmeasured: "the encrypted proxy did not run")]
            }
        }
    }

    private func target(_ kind: HitKind) -> String {
        "encrypted \(kind == .streaming ? "MB/s" : "req/s") ≥ \(Targets.encryptedOverPlain(streaming: kind == .streaming)) × plain"
    }
}
