import Hummingbird

/// A known path asked with a method it does not take is `405 Method Not Allowed` with `Allow`
/// naming the ones it does (RFC 9110 §15.5.6), not `404`. The paths and their methods are the
/// OpenAPI document's, which `OpenAPITests` keeps equal to the router's.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    let paths: DocumentedPaths

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = paths.methods(for: request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method.rawValue) else { throw error }
            let allow = allowed.joined(separator: ", ")
            throw Problem(.methodNotAllowed, slug: "method-not-allowed", title: "Method Not Allowed",
                          detail: "\(request.uri.path) takes \(allow), not \(request.method.rawValue)", headers: [.allow: allow])
        }
    }
}

/// The paths of the OpenAPI document with the methods each takes, read from its `paths:`
/// section (a path at two spaces, its methods at four), and which of them take no bearer
/// token: those whose own `security` (at six spaces) is `[]` or names no scheme that
/// `components.securitySchemes` says is `scheme: bearer`.
struct DocumentedPaths: Sendable {
    private typealias Template = (segments: [Substring], methods: [String], open: Set<String>)
    private let templates: [Template]

    init(document: [UInt8]) {
        var templates: [Template] = []
        var section = ""
        // Each operation's own security: its template, method and the schemes it names.
        var security: [(template: Int, method: String, schemes: [Substring])] = []
        var inSecurity = false
        var bearerSchemes: Set<Substring> = [], scheme: Substring = ""
        for line in String(decoding: document, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if !line.hasPrefix(" ") { section = String(line); continue }
            if section == "components:" {
                if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") { scheme = line.dropFirst(4).dropLast() }
                if line == "      scheme: bearer" { bearerSchemes.insert(scheme) }
                continue
            }
            guard section == "paths:" else { continue }
            if inSecurity, line.hasPrefix("        - ") {
                security[security.count - 1].schemes += line.dropFirst(10).split(separator: ",")
                    .compactMap { $0.split(separator: ":").first.map { Substring($0.filter { !"{} ".contains($0) }) } }
                    .filter { !$0.isEmpty }
                continue
            }
            inSecurity = false
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                templates.append((segments: line.dropFirst(2).dropLast().split(separator: "/"), methods: [], open: []))
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"), !templates.isEmpty {
                let method = line.dropFirst(4).dropLast().uppercased()
                if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) { templates[templates.count - 1].methods.append(method) }
            } else if line == "      security: []" || line == "      security:", let method = templates.last?.methods.last {
                security.append((templates.count - 1, method, []))
                inSecurity = line == "      security:"
            }
        }
        for operation in security where operation.schemes.allSatisfy({ !bearerSchemes.contains($0) }) {
            templates[operation.template].open.insert(operation.method)
        }
        self.templates = templates
    }

    /// The methods of the documented path `path` matches (a `{name}` matches any one
    /// segment); empty for a path the document does not have.
    func methods(for path: String) -> [String] {
        template(for: path)?.methods ?? []
    }

    /// Whether the document says `method` on `path` takes no bearer token (`security: []`).
    func takesNoBearerToken(_ method: String, _ path: String) -> Bool {
        template(for: path)?.open.contains(method) ?? false
    }

    private func template(for path: String) -> Template? {
        let segments = path.split(separator: "/")
        let matching = templates.filter { template in
            template.segments.count == segments.count
                && zip(template.segments, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
        // A literal segment beats a parameter (`/v1/replays/{id}` against `/v1/replays/new`).
        return matching.max { literals($0.segments) < literals($1.segments) }
    }

    private func literals(_ segments: [Substring]) -> Int {
        segments.filter { !$0.hasPrefix("{") }.count
    }
}
