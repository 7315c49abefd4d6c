#!/bin/bash
#PBS -l mem=4gb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
