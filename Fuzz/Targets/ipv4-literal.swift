// IPv4 literals in the resolver's spellings (IPv4Literal) and "is this
// machine" (LoopbackHost.isThisMachine). Beyond "no crash":
// - IPv4Literal.parse agrees with the C library's inet_aton, the reader
//   the system resolver uses, on every input without spaces or NUL (what a
//   CONNECT target can hold): same acceptance, same address;
// - every address it reads in 127.0.0.0/8 or 0.0.0.0 is "this machine".

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIPv4Literal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        let text = String(decoding: input, as: UTF8.self)
        let parsed = IPv4Literal.parse(text)
        if !input.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            var address = in_addr()
            let accepted = inet_aton(text, &address) != 0
            fuzzCheck(accepted == (parsed != nil), "inet_aton \(accepted ? "accepts" : "refuses") \(text), parse says \(String(describing: parsed))")
            if accepted, let parsed {
                fuzzCheck(UInt32(bigEndian: address.s_addr) == parsed, "\(text): inet_aton and parse disagree")
            }
        }
        if let parsed, parsed == 0 || parsed >> 24 == 127 {
            fuzzCheck(LoopbackHost.isThisMachine(text), "\(text) reads as \(parsed) but is not this machine")
        }
    }
}
