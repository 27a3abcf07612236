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
/// section (a path at two spaces, its methods at four).
struct DocumentedPaths: Sendable {
    private let templates: [(segments: [Substring], methods: [String])]

    init(document: [UInt8]) {
        var templates: [(segments: [Substring], methods: [String])] = []
        var inPaths = false
        for line in String(decoding: document, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if !line.hasPrefix(" ") { inPaths = line == "paths:"; continue }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                templates.append((segments: line.dropFirst(2).dropLast().split(separator: "/"), methods: []))
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"), !templates.isEmpty {
                let method = line.dropFirst(4).dropLast().uppercased()
                if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) { templates[templates.count - 1].methods.append(method) }
            }
        }
        self.templates = templates
    }

    /// The methods of the documented path `path` matches (a `{name}` matches any one
    /// segment); empty for a path the document does not have.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        let matching = templates.filter { template in
            template.segments.count == segments.count
                && zip(template.segments, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
        // A literal segment beats a parameter (`/v1/replays/{id}` against `/v1/replays/new`).
        return matching.max { literals($0.segments) < literals($1.segments) }?.methods ?? []
    }

    private func literals(_ segments: [Substring]) -> Int {
        segments.filter { !$0.hasPrefix("{") }.count
    }
}
