package io.github.dblock.sample.stock;

/**
 * A row of the {@code stock} table.
 *
 * @param sku the product
 * @param available units that can still be sold
 * @param sold units sold, as counted by the stock row (the {@code purchase} table has one row per order)
 */
public record Stock(String sku, int available, int sold) {

}
