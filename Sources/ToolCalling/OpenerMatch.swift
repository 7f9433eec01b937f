/// Whether call markup starts at a position: yes, the text ends before it can tell, or no.
enum OpenerMatch: Equatable {
    case match
    case partial
    case no
}
