#[derive(seed_agents_store::Row)]
#[row(table = "runs")]
struct RunDepth {
    id: String,
    depth: String,
}

fn main() {}
