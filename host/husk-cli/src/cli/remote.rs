//! The subcommands that talk to a running `husk serve`: each makes one or a
//! few API calls and prints a table, or the API's JSON with `--json`.

use std::process::ExitCode;

use anyhow::Context;
use serde_json::Value;

use super::{
    DeployArgs, EnqueueArgs, IdArgs, IncidentsArgs, JobsArgs, OutcomesArgs, PluginsArgs, RemoteArgs, RollbackArgs,
    TopicArgs, read_input,
};

/// Prints `value` as JSON when asked, else `human(value)`.
fn print(remote: &RemoteArgs, value: &Value, human: impl FnOnce(&Value) -> String) -> anyhow::Result<ExitCode> {
    if remote.json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", human(value));
    }
    Ok(ExitCode::SUCCESS)
}

/// Columns padded to their widest cell.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

/// A field as text: strings bare, null as `-`, the rest as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A version digest shortened for tables.
fn short(version: &Value) -> String {
    version.as_str().map_or_else(|| "-".into(), |v| v.chars().take(12).collect())
}

/// `?name=value&…` of the pairs with a value (URL-encoded), or nothing.
fn query(pairs: &[(&str, Option<&String>)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    let query = query.finish();
    if query.is_empty() { query } else { format!("?{query}") }
}

/// `kind` of an outcome, plus its code for business errors and faults.
fn outcome_summary(outcome: &Value) -> String {
    let kind = text(&outcome["kind"]);
    match kind.as_str() {
        "business-error" => format!("{kind} {}", text(&outcome["code"])),
        "business-status" => format!("{kind} {}", text(&outcome["value"])),
        "failed" => format!("{kind} {}", text(&outcome["last_fault"]["code"])),
        _ => kind,
    }
}

pub(super) fn enqueue(args: &EnqueueArgs) -> anyhow::Result<ExitCode> {
    if let Some(file) = &args.file {
        return enqueue_file(args, file);
    }
    let input = read_input(&args.input)?;
    let options =
        query(&[("run_at", args.at.as_ref()), ("delay", args.delay.as_ref()), ("priority", args.priority.as_ref())]);
    let path = format!("/v1/topics/{}/jobs{options}", args.topic);
    let headers: Vec<(&str, &str)> = args.key.iter().map(|k| ("Idempotency-Key", k.as_str())).collect();
    let value = args.remote.client().post(&path, Some((&input, "application/json")), &headers)?;
    print(&args.remote, &value, |v| {
        let how = if v["created"] == Value::Bool(true) { "enqueued" } else { "already enqueued with this key" };
        let when = v["run_at"].as_str().map(|at| format!(", scheduled for {at}")).unwrap_or_default();
        format!("job {} {how} on topic {}{when}\n", v["id"], text(&v["topic"]))
    })
}

/// `husk enqueue TOPIC --file jobs.jsonl`: the file's jobs in batches, each
/// one transaction; stops at the first batch refused, saying which lines
/// were enqueued.
fn enqueue_file(args: &EnqueueArgs, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut jobs: Vec<(usize, &str)> = Vec::new();
    for (n, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
        if line.is_empty() {
            continue;
        }
        // Read as raw values: an input of any depth is taken as the API takes it.
        type Members = std::collections::HashMap<String, Box<serde_json::value::RawValue>>;
        match serde_json::from_str::<Members>(line) {
            Ok(job) if job.contains_key("input") => jobs.push((n, line)),
            _ => anyhow::bail!(
                "{}:{n}: not a job: a JSON object with `input` (and optionally `key`, `run_at`, `delay`, `priority`)",
                file.display()
            ),
        }
    }
    let path = format!("/v1/topics/{}/jobs/batch", args.topic);
    let client = args.remote.client();
    let (mut created, mut existing, mut answers) = (0u64, 0u64, Vec::new());
    for chunk in jobs.chunks(usize::from(args.batch)) {
        let body = format!("[{}]", chunk.iter().map(|(_, line)| *line).collect::<Vec<_>>().join(","));
        let (first, last) = (chunk[0].0, chunk[chunk.len() - 1].0);
        let value = client.post(&path, Some((body.as_bytes(), "application/json")), &[]).with_context(|| {
            format!("lines {first}-{last} of {} not enqueued ({created} jobs before them were)", file.display())
        })?;
        let made = value["created"].as_u64().unwrap_or(0);
        created += made;
        existing += chunk.len() as u64 - made;
        answers.push(value);
    }
    let summary =
        serde_json::json!({ "topic": args.topic, "created": created, "existing": existing, "batches": answers });
    print(&args.remote, &summary, |_| {
        format!("{created} jobs enqueued on topic {}, {existing} already enqueued with their keys\n", args.topic)
    })
}

fn job_rows(jobs: &Value) -> Vec<Vec<String>> {
    jobs.as_array()
        .into_iter()
        .flatten()
        .map(|job| {
            let outcome = job["outcome"].clone();
            let last = if outcome.is_null() { text(&job["last_fault"]["code"]) } else { outcome_summary(&outcome) };
            vec![text(&job["id"]), text(&job["topic"]), text(&job["state"]), text(&job["attempt"]), last]
        })
        .collect()
}

pub(super) fn jobs(args: &JobsArgs) -> anyhow::Result<ExitCode> {
    let limit = args.limit.to_string();
    let before = args.before.map(|id| id.to_string());
    let query = query(&[
        ("limit", Some(&limit)),
        ("topic", args.topic.as_ref()),
        ("state", args.state.as_ref()),
        ("outcome", args.outcome.as_ref()),
        ("enqueued_after", args.enqueued_after.as_ref()),
        ("enqueued_before", args.enqueued_before.as_ref()),
        ("fault_code", args.fault_code.as_ref()),
        ("before", before.as_ref()),
    ]);
    let value = args.remote.client().get(&format!("/v1/jobs{query}"))?;
    print(&args.remote, &value, |v| {
        table(&["ID", "TOPIC", "STATE", "ATTEMPT", "OUTCOME / LAST FAULT"], &job_rows(&v["jobs"]))
    })
}

pub(super) fn job(args: &IdArgs) -> anyhow::Result<ExitCode> {
    let value = args.remote.client().get(&format!("/v1/jobs/{}", args.id))?;
    print(&args.remote, &value, |job| {
        let mut out = format!(
            "job {}  topic {}  state {}  attempt {}\n",
            job["id"],
            text(&job["topic"]),
            text(&job["state"]),
            job["attempt"]
        );
        if let Some(at) = job["not_before"].as_str() {
            out += &format!("not before: {at}\n");
        }
        if job["priority"].as_i64().is_some_and(|p| p != 0) {
            out += &format!("priority: {}\n", job["priority"]);
        }
        let attempts: Vec<Vec<String>> = job["attempts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| vec![text(&a["attempt"]), short(&a["plugin_version"]), text(&a["fault"]["code"])])
            .collect();
        if !attempts.is_empty() {
            out += &table(&["ATTEMPT", "VERSION", "FAULT"], &attempts);
        }
        if let Some(input) = job.get("input") {
            out += &format!("input: {input}\n");
        }
        let outcome = &job["outcome"];
        if !outcome.is_null() {
            out += &format!("outcome: {} at {}\n", outcome_summary(outcome), text(&outcome["finished_at"]));
            if let Some(output) = outcome.get("output") {
                out += &format!("output: {output}\n");
            }
        }
        out
    })
}

pub(super) fn cancel(args: &IdArgs) -> anyhow::Result<ExitCode> {
    let value = args.remote.client().post(&format!("/v1/jobs/{}/cancel", args.id), None, &[])?;
    print(&args.remote, &value, |v| format!("job {}: {}\n", v["id"], text(&v["result"])))
}

pub(super) fn incidents(args: &IncidentsArgs) -> anyhow::Result<ExitCode> {
    let remote = &args.remote;
    let value = remote.client().get(&format!("/v1/incidents{}", query(&[("topic", args.topic.as_ref())])))?;
    print(remote, &value, |v| {
        if v["incidents"].as_array().is_none_or(Vec::is_empty) {
            return "no open incidents\n".into();
        }
        table(&["ID", "TOPIC", "STATE", "ATTEMPT", "OUTCOME / LAST FAULT"], &job_rows(&v["incidents"]))
    })
}

/// `retry` or `discard` an incident.
pub(super) fn incident(args: &IdArgs, action: &str) -> anyhow::Result<ExitCode> {
    let value = args.remote.client().post(&format!("/v1/incidents/{}/{action}", args.id), None, &[])?;
    print(&args.remote, &value, |v| format!("job {}: {}\n", v["id"], text(&v["result"])))
}

pub(super) fn deploy(args: &DeployArgs) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let path = format!("/v1/topics/{}/plugins", args.topic);
    let value = args.remote.client().post(&path, Some((&bytes, "application/wasm")), &[])?;
    print(&args.remote, &value, |v| format!("topic {}: version {} is current\n", args.topic, short(&v["version"])))
}

fn version_rows(topic: &str, versions: &Value) -> Vec<Vec<String>> {
    versions
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let current = match (v["current"] == Value::Bool(true), v["rolled_back_at"].as_str()) {
                (false, _) => String::new(),
                (true, None) => "*".to_owned(),
                (true, Some(at)) => match v["rolled_back_by"].as_str() {
                    Some(by) => format!("* rolled back {at} by {by}"),
                    None => format!("* rolled back {at}"),
                },
            };
            let by = v["deployed_by"].as_str().unwrap_or("-").to_owned();
            vec![topic.to_owned(), short(&v["version"]), text(&v["deployed_at"]), text(&v["origin"]), by, current]
        })
        .collect()
}

pub(super) fn plugins(args: &PluginsArgs) -> anyhow::Result<ExitCode> {
    let client = args.remote.client();
    let topics: Vec<String> = match &args.topic {
        Some(topic) => vec![topic.clone()],
        None => client.get("/v1/topics")?["topics"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["topic"].as_str().map(str::to_owned))
            .collect(),
    };
    let listed = topics
        .iter()
        .map(|topic| Ok((topic.clone(), client.get(&format!("/v1/topics/{topic}/plugins"))?["versions"].clone())))
        .collect::<Result<Vec<(String, Value)>, crate::client::ClientError>>()?;
    let value = Value::Object(listed.iter().cloned().collect());
    print(&args.remote, &value, |_| {
        let rows: Vec<Vec<String>> =
            listed.iter().flat_map(|(topic, versions)| version_rows(topic, versions)).collect();
        table(&["TOPIC", "VERSION", "DEPLOYED", "ORIGIN", "BY", "CURRENT"], &rows)
    })
}

pub(super) fn rollback(args: &RollbackArgs) -> anyhow::Result<ExitCode> {
    let body = serde_json::to_vec(&serde_json::json!({ "version": args.to }))?;
    let path = format!("/v1/topics/{}/rollback", args.topic);
    let value = args.remote.client().post(&path, Some((&body, "application/json")), &[])?;
    print(&args.remote, &value, |v| {
        format!("topic {}: rolled back; version {} is current\n", args.topic, short(&v["version"]))
    })
}

pub(super) fn topics(args: &RemoteArgs) -> anyhow::Result<ExitCode> {
    let value = args.client().get("/v1/topics")?;
    print(args, &value, |v| {
        let rows: Vec<Vec<String>> = v["topics"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let depth = &t["depth"];
                vec![
                    text(&t["topic"]),
                    short(&t["version"]),
                    depth["queued"].to_string(),
                    depth["waiting"].to_string(),
                    depth["running"].to_string(),
                    t["open_incidents"].to_string(),
                    if t["paused"] == Value::Bool(true) { "paused" } else { "running" }.to_owned(),
                ]
            })
            .collect();
        table(&["TOPIC", "VERSION", "QUEUED", "WAITING", "RUNNING", "INCIDENTS", "STATE"], &rows)
    })
}

pub(super) fn set_paused(args: &TopicArgs, paused: bool) -> anyhow::Result<ExitCode> {
    let path = format!("/v1/topics/{}/{}", args.topic, if paused { "pause" } else { "resume" });
    let value = args.remote.client().post(&path, None, &[])?;
    print(&args.remote, &value, |v| {
        let state = match (paused, v["changed"] == Value::Bool(true)) {
            (true, true) => "paused",
            (true, false) => "already paused",
            (false, true) => "resumed",
            (false, false) => "was not paused",
        };
        format!("topic {}: {state}\n", args.topic)
    })
}

pub(super) fn outcomes(args: &OutcomesArgs) -> anyhow::Result<ExitCode> {
    let path = format!("/v1/outcomes?after={}&wait={}&limit={}", args.after, args.wait, args.limit);
    let value = args.remote.client().get(&path)?;
    print(&args.remote, &value, |v| {
        let rows: Vec<Vec<String>> = v["outcomes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let summary = outcome_summary(o);
                vec![text(&o["cursor"]), text(&o["job_id"]), text(&o["topic"]), text(&o["attempts"]), summary]
            })
            .collect();
        format!("{}cursor {}\n", table(&["CURSOR", "JOB", "TOPIC", "ATTEMPTS", "OUTCOME"], &rows), v["cursor"])
    })
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn table_pads_columns_to_the_widest_cell() {
        let rows = vec![vec!["1".to_owned(), "transform".to_owned()], vec!["22".to_owned(), "t".to_owned()]];
        assert_eq!(table(&["ID", "TOPIC"], &rows), "ID  TOPIC\n1   transform\n22  t\n");
    }
}
