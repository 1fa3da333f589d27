//! Periodic jobs through the real binary: three `husk serve` processes
//! share one PostgreSQL schema and a schedule of one tick a second; one is
//! killed with SIGKILL midway. Every tick makes exactly one job, and none
//! is lost to the kill.

use husk_server::tokens::token_hash;

use crate::rig::pg::TestSchema;
use crate::support::guest;
use crate::support_server::{Server, TOKEN_A};

/// The ticks (ms since the epoch) the processes enqueued, in order.
fn ticks(client: &mut postgres::Client, schema: &str) -> Vec<i64> {
    let sql = format!("SELECT key FROM {schema}.husk_keys WHERE key LIKE 'schedule:tick:%'");
    let mut ticks: Vec<i64> = client
        .query(&sql, &[])
        .unwrap()
        .iter()
        .map(|row| row.get::<_, String>(0).rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    ticks.sort_unstable();
    ticks
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn three_processes_make_one_job_per_tick_and_a_kill_loses_none() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    let config = format!(
        r#"store = "{url}"
postgres_schema = "{schema}"
epoch_tick = "10ms"
shutdown_grace = "2s"

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.tick]
tenant = "a"
plugin = "{plugin}"
workers = 1
schedule = "* * * * * *"
input = {{ name = "tick" }}
catch_up = "2s"
"#,
        schema = schema.name,
        hash = token_hash(TOKEN_A),
        plugin = guest("transform").display(),
    );
    let mut servers: Vec<Server> = (0..3).map(|_| Server::process(&config)).collect();
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    servers[0].wait_until("five ticks", |_| ticks(&mut client, &schema.name).len() >= 5);
    servers.remove(1).kill9();
    let killed_at = ticks(&mut client, &schema.name).len();
    servers[0].wait_until("ten ticks after the kill", |_| ticks(&mut client, &schema.name).len() >= killed_at + 10);
    for server in servers {
        let (status, _) = server.terminate();
        assert!(status.success());
    }
    let ticks = ticks(&mut client, &schema.name);
    assert!(ticks.windows(2).all(|pair| pair[1] - pair[0] == 1000), "every second, once: {ticks:?}");
    let jobs: i64 = client
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM {s}.husk_jobs WHERE topic = 'tick')
                      + (SELECT count(DISTINCT job_id) FROM {s}.husk_outcomes WHERE topic = 'tick')",
                s = schema.name
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(jobs as usize, ticks.len(), "one job per tick");
}
