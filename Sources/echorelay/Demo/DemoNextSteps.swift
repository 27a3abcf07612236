/// What to try once the tour has ended, printed with this run's own ids: each line works as
/// printed, in the terminal where the demo ran (its ECHORELAY_URL and ECHORELAY_TOKEN set).
enum DemoNextSteps {
    static func lines(_ report: DemoReport, baseURL: String, command: String = CommandName.current()) -> [String] {
        let rows = report.users.flatMap(\.events)
        guard let leaving = report.users.first?.user_id else { return [] }
        var steps = [("\(command) events list --user \(leaving)", "why was this user logged out?")]
        if let forged = rows.first(where: \.forged) {
            steps.append(("\(command) events show \(forged.event_id)", "the forged deactivation, and why it was rejected"))
        }
        if let webhookID = rows.lazy.compactMap(\.webhook_id).first {
            steps.append(("\(command) deliveries show \(webhookID)", "a backend asks: what was the delivery with this webhook-id?"))
        }
        steps.append(("\(command) audit --action subscription.delete", "who changed what: the demo deleted its subscription"))
        let width = steps.map(\.0.count).max() ?? 0
        return ["", "Look around, in this terminal (with its ECHORELAY_URL and ECHORELAY_TOKEN):"]
            + steps.map { "  " + TextOutput.padded($0.0, to: width) + "   # " + $0.1 }
            + ["  The console: \(baseURL)/console (sign in with ECHORELAY_TOKEN)"]
    }
}
