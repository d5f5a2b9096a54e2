#[derive(seed_agents_store::Row)]
#[row(table = "runs")]
struct RunDir {
    id: String,
    state_dir: String,
}

fn main() {}
