// Rewriting every URL of an MPD through a mapping, and nothing else: the
// output is the input with only the URL bytes replaced, so namespaces,
// comments, unknown elements, attribute order and quoting survive byte for
// byte. Relative URLs resolve hierarchically through the BaseURLs in scope.

extension DASH {
    /// Rewrites every URL of an MPD.
    ///
    /// Each URL carrier (see `MPDURLKind`) is resolved against the BaseURL
    /// in scope (itself resolved against the one above, up to
    /// `manifestURL`), then passed to `map` with the value as written;
    /// the result (XML-escaped) replaces it, nil keeps it. Values that are
    /// not http(s) URLs, that use an entity a DTD declares, or whose text
    /// is not plain character data are kept and not passed to `map`.
    ///
    /// A relative URL of segment information above BaseURLs (a
    /// SegmentTemplate of an AdaptationSet whose Representations have
    /// BaseURLs of their own) is kept as written: it resolves against each
    /// Representation's BaseURL, which is rewritten.
    ///
    /// Throws, rather than a partial rewrite, on XML that is not
    /// well-formed, a root that is not `MPD`, or an unusable `manifestURL`.
    package static func rewrite<Bytes: Collection<UInt8>>(
        _ manifest: Bytes, manifestURL: String,
        map: (_ absoluteURL: String, _ written: String, _ kind: MPDURLKind) -> String?
    ) throws(DASHError) -> [UInt8] {
        try manifest.withContiguousBytes { b throws(DASHError) in
            var rewrite = try MPDRewrite(b, manifestURL: manifestURL)
            return try rewrite.run(map)
        }
    }
}

/// One rewrite: two passes over the tokens (the first finds which elements
/// have a BaseURL below them), the second splices.
private struct MPDRewrite {
    let b: UnsafeBufferPointer<UInt8>
    let root: HLSURIResolver
    typealias Map = (String, String, MPDURLKind) -> String?

    /// An open element: the base its children resolve against (nil: not
    /// usable, nothing below is rewritten) and what it is.
    struct Frame {
        var base: HLSURIResolver?
        /// The base from above, before a BaseURL of its own: what each of its
        /// BaseURLs (alternatives) resolves against.
        var inherited: HLSURIResolver?
        var sawBaseURL = false
        /// A text carrier: its kind and text seen so far (nil: not plain text).
        var textKind: MPDURLKind?
        var text: Range<Int>?
        var plainText = true
        var inContentProtection = false
        /// Whether the Period, AdaptationSet or Representation this element
        /// is in (or is) has a BaseURL below its children (first pass).
        var levelBaseBelow = false
    }

    var out: [UInt8] = []
    var copied = 0

    init(_ b: UnsafeBufferPointer<UInt8>, manifestURL: String) throws(DASHError) {
        self.b = b
        do {
            root = try HLSURIResolver(playlistURL: manifestURL)
        } catch {
            throw .invalidManifestURL(manifestURL)
        }
    }

    /// Elements in document order that have a BaseURL below their children.
    func elementsAboveBaseURLs() throws(DASHError) -> [Bool] {
        var scanner = XMLScanner(b)
        var flags: [Bool] = []
        var stack: [Int] = []
        while let token = try scanner.next() {
            guard case .start(let name, _, let selfClosing) = token else {
                if case .end = token { stack.removeLast() }
                continue
            }
            // Above it, but not its parent: a template beside this BaseURL resolves against it.
            if scanner.isNamed(name, "BaseURL") { for k in stack.dropLast() { flags[k] = true } }
            flags.append(false)
            if !selfClosing { stack.append(flags.count - 1) }
        }
        return flags
    }

    mutating func run(_ map: Map) throws(DASHError) -> [UInt8] {
        let baseBelow = try elementsAboveBaseURLs()
        var scanner = XMLScanner(b)
        var frames: [Frame] = []
        var ordinal = 0
        out.reserveCapacity(b.count + b.count / 2)
        while let token = try scanner.next() {
            switch token {
            case .start(let name, let attributes, let selfClosing):
                if frames.isEmpty && !scanner.isNamed(name, "MPD") { throw .notMPD }
                let parent = frames.last
                let isBaseURL = scanner.isNamed(name, "BaseURL")
                // A parent's nil base (a BaseURL not understood) stays nil below it.
                let base: HLSURIResolver?
                if let parent { base = isBaseURL ? parent.inherited : parent.base } else { base = root }
                var frame = Frame(base: base, inherited: base)
                frame.inContentProtection = parent?.inContentProtection ?? false
                    || scanner.isNamed(name, "ContentProtection")
                let isLevel = scanner.isNamed(name, "Period") || scanner.isNamed(name, "AdaptationSet")
                    || scanner.isNamed(name, "Representation")
                frame.levelBaseBelow = isLevel ? baseBelow[ordinal] : parent?.levelBaseBelow ?? false
                ordinal += 1
                rewriteAttributes(scanner, name, attributes, frame: frame, map)
                frame.textKind = textKind(scanner, name, inContentProtection: frame.inContentProtection)
                if !selfClosing { frames.append(frame) }
            case .text(let r):
                guard frames.last?.textKind != nil else { continue }
                if frames[frames.count - 1].text != nil { frames[frames.count - 1].plainText = false }
                frames[frames.count - 1].text = r
            case .cdata, .other:
                if !frames.isEmpty { frames[frames.count - 1].plainText = false }
            case .end:
                let frame = frames.removeLast()
                guard let kind = frame.textKind, frame.plainText, let r = frame.text else {
                    if frame.textKind == .baseURL, !frame.plainText, !frames.isEmpty, !frames[frames.count - 1].sawBaseURL {
                        // A BaseURL this cannot read: nothing below it is resolved (nor rewritten).
                        frames[frames.count - 1].sawBaseURL = true
                        frames[frames.count - 1].base = nil
                    }
                    // Another element inside a carrier: not plain text.
                    if !frames.isEmpty, frames[frames.count - 1].textKind != nil { frames[frames.count - 1].plainText = false }
                    continue
                }
                let value = XMLText.trimmed(b, r)
                let resolved = replace(value, quote: nil, kind: kind, base: frame.base, map)
                if kind == .baseURL, !frames.isEmpty, !frames[frames.count - 1].sawBaseURL {
                    // The first BaseURL is the one children resolve against (others are alternatives).
                    frames[frames.count - 1].sawBaseURL = true
                    frames[frames.count - 1].base = resolved.flatMap { try? HLSURIResolver(playlistURL: $0) }
                }
                if !frames.isEmpty, frames[frames.count - 1].textKind != nil { frames[frames.count - 1].plainText = false }
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: b[copied...]))
        return out
    }

    private mutating func rewriteAttributes(_ scanner: XMLScanner, _ name: Range<Int>, _ attributes: [XMLAttribute],
                                            frame: Frame, _ map: Map) {
        for a in attributes {
            guard let kind = attributeKind(scanner, element: name, attribute: a.name, frame: frame) else { continue }
            // Segment information above BaseURLs applies under each of them: a
            // relative URL in it resolves against each, left as written.
            if kind.isSegmentInformation, frame.levelBaseBelow, !names(b[a.value]) { continue }
            replace(a.value, quote: b[a.value.lowerBound - 1], kind: kind, base: frame.base, map)
        }
    }

    private func attributeKind(_ scanner: XMLScanner, element: Range<Int>, attribute: Range<Int>,
                               frame: Frame) -> MPDURLKind? {
        let attributeName = UnsafeBufferPointer(rebasing: b[attribute])
        // xlink:href (any prefix bound to XLink: only XLink's href is prefixed in an MPD).
        if scanner.localName(attribute).elementsEqual("href".utf8), attributeName.count > 4 { return .remoteElement }
        let local = scanner.localName(element)
        func named(_ s: String) -> Bool { local.elementsEqual(s.utf8) }
        func attr(_ s: String) -> Bool { attributeName.elementsEqual(s.utf8) }
        if named("SegmentTemplate") {
            if attr("media") { return .mediaTemplate }
            if attr("initialization") { return .initializationTemplate }
            if attr("index") { return .indexTemplate }
            if attr("bitstreamSwitching") { return .bitstreamSwitchingTemplate }
        } else if named("SegmentURL") {
            if attr("media") { return .segment }
            if attr("index") { return .segmentIndex }
        } else if attr("sourceURL") {
            if named("Initialization") { return .initialization }
            if named("RepresentationIndex") { return .representationIndex }
            if named("BitstreamSwitching") { return .bitstreamSwitching }
        } else if named("UTCTiming"), attr("value") {
            return .timing
        } else if frame.inContentProtection, named("laurl"), attr("licenseUrl") {
            return .licence
        }
        return nil
    }

    private func textKind(_ scanner: XMLScanner, _ name: Range<Int>, inContentProtection: Bool) -> MPDURLKind? {
        let local = scanner.localName(name)
        if local.elementsEqual("BaseURL".utf8) { return .baseURL }
        if local.elementsEqual("Location".utf8) { return .location }
        if local.elementsEqual("PatchLocation".utf8) { return .patchLocation }
        if inContentProtection, local.elementsEqual("Laurl".utf8) || local.elementsEqual("laurl".utf8) { return .licence }
        return nil
    }

    /// Whether a value as written names a scheme (absolute) or a host.
    private func names(_ value: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        value.starts(with: "//".utf8) || OriginURL.schemeLength(UnsafeBufferPointer(rebasing: value)) != nil
    }

    /// Maps one value and splices the result in; returns the value's
    /// absolute URL (nil when it is not one).
    @discardableResult
    private mutating func replace(_ r: Range<Int>, quote: UInt8?, kind: MPDURLKind, base: HLSURIResolver?,
                                  _ map: Map) -> String? {
        guard let base, let written = XMLText.decode(b[r]), let absolute = base.resolve(written) else { return nil }
        guard let mapped = map(absolute, written, kind), !mapped.isEmpty else { return absolute }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: b[copied..<r.lowerBound]))
        out.append(contentsOf: XMLText.escape(mapped, quote: quote))
        copied = r.upperBound
        return absolute
    }
}
