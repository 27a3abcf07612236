import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Mustache

/// Renders the console's pages from the Mustache templates embedded in the binary
/// (`Console/Templates`), each inside `layout.mustache`. Every `{{value}}` is HTML-escaped by
/// Mustache; the templates use no triple mustaches, so nothing from outside reaches a page
/// unescaped.
struct ConsoleRenderer: Sendable {
    private let library: MustacheLibrary

    init() {
        var library = MustacheLibrary()
        for (name, bytes) in Self.templates {
            // The templates are part of the source tree and parsed at start-up: a broken one
            // is a programming error that every console test would show at once.
            try! library.register(String(decoding: bytes, as: UTF8.self), named: name)
        }
        self.library = library
    }

    private static let templates: [(String, [UInt8])] = [
        ("layout", PackageResources.layout_mustache), ("time", PackageResources.time_mustache),
        ("sign_in", PackageResources.sign_in_mustache), ("home", PackageResources.home_mustache),
        ("user", PackageResources.user_mustache), ("event", PackageResources.event_mustache),
        ("confirm", PackageResources.confirm_mustache), ("bulk_replay", PackageResources.bulk_replay_mustache),
        ("replay", PackageResources.replay_mustache), ("dead_letters", PackageResources.dead_letters_mustache),
        ("subscriptions", PackageResources.subscriptions_mustache), ("audit", PackageResources.audit_mustache),
        ("message", PackageResources.message_mustache), ("recent_events", PackageResources.recent_events_mustache),
        ("shared_signals", PackageResources.shared_signals_mustache), ("index", PackageResources.index_mustache),
        ("subscription", PackageResources.subscription_mustache), ("secret", PackageResources.secret_mustache),
        ("deliveries", PackageResources.deliveries_mustache), ("attempts", PackageResources.attempts_mustache),
    ]

    static var styleSheet: [UInt8] { PackageResources.console_css }

    /// What every page shows around its own content.
    struct Document {
        let title: String
        /// Who is signed in, for the header; nil on the sign-in page.
        let session: SessionView?
        /// The session's CSRF token, for the page's forms (the same as `session.formToken`, at
        /// the top level so that every page template finds it).
        let formToken: String?
        let notice: String?
        let problem: ProblemView?
        /// Seconds after which the browser reloads the page (a running replay).
        let refresh: Int?
        let page: Any

        init(title: String, session: ConsoleSession?, notice: String? = nil, problem: ProblemView? = nil, refresh: Int? = nil,
             page: Any) {
            self.title = title
            self.session = session.map {
                SessionView(name: $0.principal.name, role: $0.principal.role.rawValue, formToken: $0.formToken,
                            staff: Set<Role>.staff.contains($0.principal.role))
            }
            self.formToken = session?.formToken
            self.notice = notice
            self.problem = problem
            self.refresh = refresh
            self.page = page
        }
    }

    struct SessionView {
        let name: String
        let role: String
        let formToken: String
        /// Support or admin: the whole menu. An app team's session has its subscriptions only.
        let staff: Bool
    }

    struct ProblemView {
        let title: String
        let detail: String?
        let fields: [FieldProblem]
    }

    func render(_ template: String, status: HTTPResponse.Status = .ok, _ document: Document, headers: HTTPFields = [:]) -> Response {
        var fields = Self.securityHeaders
        fields[.contentType] = "text/html; charset=utf-8"
        fields.append(contentsOf: headers)
        let html = library.render(document, withTemplate: template) ?? ""
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The headers every console answer carries: no script may run (not even inline), no other
    /// site may frame or embed it, forms post only here, and nothing is cached or sent on as a
    /// referrer (console URLs hold user ids).
    static let securityHeaders: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!:
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        .cacheControl: "no-store",
    ]

    /// 303 See Other: where a form's POST sends the browser next.
    static func redirect(to location: String, headers: HTTPFields = [:]) -> Response {
        var fields = securityHeaders
        fields[.location] = location
        fields.append(contentsOf: headers)
        return Response(status: .seeOther, headers: fields)
    }
}

/// Times as the console shows them: UTC to the second, with a relative hint ("3 min ago").
struct TimeView {
    let iso: String
    let utc: String
    let relative: String

    init(_ date: Date, now: Date) {
        iso = RFC3339.format(date)
        // RFC3339.format writes UTC as "2026-11-23T19:46:05.605852Z": the same to the second.
        utc = iso.prefix(19).replacingOccurrences(of: "T", with: " ") + " UTC"
        relative = Self.relative(date, now: now)
    }

    /// The distance from `now` in the largest whole unit: "just now", "42 s ago", "3 min ago",
    /// "5 h ago", "12 days ago"; "in 3 min" for times to come.
    static func relative(_ date: Date, now: Date) -> String {
        let seconds = Int(now.timeIntervalSince(date).rounded())
        let distance = abs(seconds)
        if distance < 5 { return "just now" }
        let amount: String = switch distance {
        case ..<60: "\(distance) s"
        case ..<3600: "\(distance / 60) min"
        case ..<86_400: "\(distance / 3600) h"
        default: distance / 86_400 == 1 ? "1 day" : "\(distance / 86_400) days"
        }
        return seconds >= 0 ? "\(amount) ago" : "in \(amount)"
    }
}
