/** The PATCH merge rule numbers and extensions share. */
import { describe, expect, test } from "bun:test";
import { mergeRoutedFields, type RoutedFields } from "./routed-fields.ts";

const stored: RoutedFields = {
  dest_kind: "flow",
  dest_id: "flow_1",
  schedule_id: "sch_1",
  closed_dest_kind: "extension",
  closed_dest_id: "ext_1",
  holiday_dest_kind: "hangup",
  holiday_dest_id: null,
};

describe("mergeRoutedFields", () => {
  test("fields not sent keep their stored values; nothing else of the row leaks in", () => {
    expect(mergeRoutedFields({ ...stored, label: "x" } as RoutedFields, {})).toEqual(stored);
  });

  test("a new kind sent without its id clears the id; with its id takes both", () => {
    expect(mergeRoutedFields(stored, { dest_kind: "hangup" })).toEqual({ ...stored, dest_kind: "hangup", dest_id: null });
    expect(mergeRoutedFields(stored, { dest_kind: "queue", dest_id: "q_1" })).toEqual({ ...stored, dest_kind: "queue", dest_id: "q_1" });
    expect(mergeRoutedFields(stored, { closed_dest_kind: null })).toEqual({ ...stored, closed_dest_kind: null, closed_dest_id: null });
  });

  test("the stored kind sent again keeps the id", () => {
    expect(mergeRoutedFields(stored, { dest_kind: "flow" })).toEqual(stored);
    expect(mergeRoutedFields(stored, { holiday_dest_kind: "hangup" })).toEqual(stored);
  });

  test("an id sent alone keeps the kind", () => {
    expect(mergeRoutedFields(stored, { dest_id: "flow_2" })).toEqual({ ...stored, dest_id: "flow_2" });
  });

  test("schedule_id follows the patch, null included", () => {
    expect(mergeRoutedFields(stored, { schedule_id: null })).toEqual({ ...stored, schedule_id: null });
    expect(mergeRoutedFields(stored, { schedule_id: "sch_2" })).toEqual({ ...stored, schedule_id: "sch_2" });
  });
});
