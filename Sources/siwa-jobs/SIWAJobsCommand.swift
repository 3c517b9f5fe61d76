@main
struct SIWAJobsCommand {
    static func main() async {
        print("siwa-jobs")
    }
}
