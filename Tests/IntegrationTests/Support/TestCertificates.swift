import Foundation

/// A test CA and server certificates signed by it, made with `openssl` at
/// test time (EC P-256, quick to generate) in `directory`:
/// - `good`: valid now for 127.0.0.1, ::1 and localhost;
/// - `wrongHost`: valid now, but only for wrong.example and 10.255.255.1;
/// - `expired`: for the right hosts, valid only during 2020.
struct TestCertificates {
    let directory: TemporaryDirectory
    /// The CA certificate (PEM), for `--ca-file`.
    let caFile: String
    let good: TLSConfig
    let wrongHost: TLSConfig
    let expired: TLSConfig

    static let rightHosts = "IP:127.0.0.1,IP:::1,DNS:localhost"

    init() throws {
        let openssl = try TestTools.requireTool("openssl")
        let directory = try TemporaryDirectory(prefix: "test-certs")
        self.directory = directory
        let dir = directory.path
        let caFile = dir + "/ca.pem"
        self.caFile = caFile
        func run(_ arguments: [String]) throws {
            let result = try TestTools.run(openssl, arguments, timeout: 30, currentDirectory: directory.url)
            guard result.succeeded else {
                throw TestSupportError("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(result.stderr)")
            }
        }
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(["req", "-x509"] + ecKey + ["-keyout", dir + "/ca.key", "-out", caFile, "-days", "3",
                 "-subj", "/CN=HTTPCache Test CA",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])

        // `openssl ca` is the OpenSSL 3.0 tool that can set arbitrary validity
        // dates (for the expired certificate); it wants a small config and database.
        try Data().write(to: directory.file("index.txt"))
        try Data("01\n".utf8).write(to: directory.file("serial"))
        try Data("""
        [ca]
        default_ca = test
        [test]
        database = \(dir)/index.txt
        new_certs_dir = \(dir)
        serial = \(dir)/serial
        default_md = sha256
        policy = anything
        copy_extensions = copy
        unique_subject = no
        [anything]
        commonName = supplied

        """.utf8).write(to: directory.file("ca.cnf"))

        func issue(_ name: String, hosts: String, start: String?, end: String?) throws -> TLSConfig {
            let key = dir + "/\(name).key", csr = dir + "/\(name).csr", cert = dir + "/\(name).pem"
            try run(["req", "-new"] + ecKey + ["-keyout", key, "-out", csr, "-subj", "/CN=\(name)",
                     "-addext", "subjectAltName=\(hosts)", "-addext", "extendedKeyUsage=serverAuth"])
            var arguments = ["ca", "-batch", "-notext", "-config", dir + "/ca.cnf", "-cert", caFile,
                             "-keyfile", dir + "/ca.key", "-in", csr, "-out", cert]
            if let start, let end {
                arguments += ["-startdate", start, "-enddate", end]
            } else {
                arguments += ["-days", "2"]
            }
            try run(arguments)
            return TLSConfig(certificatePath: cert, keyPath: key)
        }
        good = try issue("good", hosts: Self.rightHosts, start: nil, end: nil)
        wrongHost = try issue("wrong-host", hosts: "DNS:wrong.example,IP:10.255.255.1", start: nil, end: nil)
        expired = try issue("expired", hosts: Self.rightHosts, start: "20200101000000Z", end: "20200201000000Z")
    }
}
